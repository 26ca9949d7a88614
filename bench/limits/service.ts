// The service's own figures in `npm run bench`: the built server (`npm start`'s) loaded by wrk on
// two reads and each write route, and on SQLite the writes again with WORKERS=2.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startService } from '../processes.js';
import { type Setup, writeScenarios } from '../write-scenarios.js';
import { measure, present, type Row } from './measure.js';
import { DATA, log, wanted } from './settings.js';
import { type DeliveryFigures, writesWithEndpoint } from './webhooks.js';

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/**
 * The service's reads and writes on `engine` at `url`. Leaves the page it answered, and its
 * headers, in DATA's page.json and headers.json for the read ceilings to serve.
 */
export async function serviceFigures(
  engine: 'sqlite' | 'postgres',
  url: string,
  setup: Setup,
): Promise<{ reads: Row[]; writes: Row[]; withEndpoint: Row[]; deliveries: DeliveryFigures[] }> {
  const database = engine === 'postgres';
  const reads: Row[] = [];
  const writes: Row[] = [];
  let hooked: { rows: Row[]; deliveries: DeliveryFigures[] } = { rows: [], deliveries: [] };

  // Receivers on this machine are private addresses: allowed for the webhook figures.
  const server = await startService(url, 1, [], { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
  try {
    const first = await fetch(`${server.url}/v1/earning_rules?limit=50`, { headers: bearer(setup.account.apiKey) });
    const page = await first.text();
    const headers: Record<string, string> = {};
    first.headers.forEach((value, name) => {
      if (!['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(name))
        headers[name] = value;
    });
    writeFileSync(join(DATA, 'page.json'), page);
    writeFileSync(join(DATA, 'headers.json'), JSON.stringify(headers));
    log(
      `  the page: ${Buffer.byteLength(page)} bytes, ${(JSON.parse(page) as { earning_rules: unknown[] }).earning_rules.length} rules`,
    );

    log(`== ${engine}: reads`);
    reads.push(
      ...present([
        await measure(
          'GET /v1/earning_rules?limit=50',
          { url: `${server.url}/v1/earning_rules?limit=50`, headers: bearer(setup.account.apiKey) },
          server.pids,
          database,
        ),
        await measure(
          'GET /v1/referral_settings',
          { url: `${server.url}/v1/referral_settings`, headers: bearer(setup.account.apiKey) },
          server.pids,
          database,
        ),
      ]),
    );
    log(`== ${engine}: writes`);
    for (const scenario of writeScenarios(setup)) {
      writes.push(
        ...present([
          await measure(
            scenario.name,
            {
              url: `${server.url}${scenario.path}`,
              method: 'POST',
              headers: bearer(scenario.token),
              bodies: (run) => scenario.many((n) => scenario.body(n, `${run}-${n}`))(),
            },
            server.pids,
            database,
          ),
        ]),
      );
    }
    // Last on this server: the endpoint, once added, receives every later write's events.
    hooked = await writesWithEndpoint(server, url, setup, database);
  } finally {
    await server.stop();
  }

  if (engine === 'sqlite' && writeScenarios(setup).some((scenario) => wanted(`${scenario.name}, WORKERS=2`))) {
    // Two processes writing one SQLite file: the tail the issue names.
    log(`== ${engine}: writes with WORKERS=2`);
    const two = await startService(url, 2);
    try {
      for (const scenario of writeScenarios(setup)) {
        const row = await measure(
          `${scenario.name}, WORKERS=2`,
          {
            url: `${two.url}${scenario.path}`,
            method: 'POST',
            headers: bearer(scenario.token),
            bodies: (run) => scenario.many((n) => scenario.body(n, `w2-${run}-${n}`))(),
          },
          two.pids,
          false,
        );
        writes.push(...present([row]));
      }
    } finally {
      await two.stop();
    }
  }
  return { reads, writes, withEndpoint: hooked.rows, deliveries: hooked.deliveries };
}
