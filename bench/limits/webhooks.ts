// What events and webhooks cost the write routes (issue 29): each write route measured again on the
// same server after an endpoint subscribed to every event is added, pointing at a receiver that
// answers 204 at once, with the deliveries per second and the age of the oldest pending delivery
// sampled every second meanwhile. The contract's bar: at least 0.85 of the throughput without the
// endpoint, and deliveries that keep up (a backlog that grows for the whole run is a miss).
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { openDb } from '../../src/storage/db.js';
import type { Server } from '../processes.js';
import { type Setup, writeScenarios } from '../write-scenarios.js';
import { measure, type Row } from './measure.js';
import { log, wanted } from './settings.js';

/** The name a write scenario's row has when measured with the endpoint. */
export const WITH_ENDPOINT = ', one webhook endpoint';

/** The deliveries while one scenario was measured with the endpoint. */
export interface DeliveryFigures {
  scenario: string;
  /** Deliveries the receiver got per second while the scenario ran (warm-up and runs). */
  perSecond: number;
  /** The oldest pending delivery's age, at its largest, in seconds. */
  oldestMaxS: number;
  /** Deliveries pending at the first and last sample of the run. */
  pendingFirst: number;
  pendingLast: number;
  /** How long the backlog took to drain after the load stopped, in seconds (null: not within 120 s). */
  drainS: number | null;
}

/** A receiver that answers every delivery 204 at once, counting them. */
export async function receiver(): Promise<{ url: string; count: () => number; close: () => Promise<void> }> {
  let received = 0;
  const server: HttpServer = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      received++;
      response.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    count: () => received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * Adds the endpoint to `server` (started with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true, which a receiver
 * on this machine needs), then measures every write scenario with it. Answers the rows (named
 * `<scenario>, one webhook endpoint`) and the deliveries of each.
 */
export async function writesWithEndpoint(
  server: Server,
  databaseUrl: string,
  setup: Setup,
  database: boolean,
): Promise<{ rows: Row[]; deliveries: DeliveryFigures[] }> {
  const scenarios = writeScenarios(setup).filter((scenario) => wanted(`${scenario.name}${WITH_ENDPOINT}`));
  if (scenarios.length === 0) return { rows: [], deliveries: [] };
  const hooks = await receiver();
  const db = openDb(databaseUrl, { poolMax: 1 });
  const rows: Row[] = [];
  const deliveries: DeliveryFigures[] = [];
  let endpointId: number | null = null;
  try {
    const created = await fetch(`${server.url}/v1/webhook_endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${setup.account.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ webhook_endpoint: { url: hooks.url, enabled_events: ['*'] } }),
    });
    if (created.status !== 201)
      throw new Error(`creating the endpoint answered ${created.status}: ${await created.text()}`);
    endpointId = ((await created.json()) as { webhook_endpoint: { id: number } }).webhook_endpoint.id;
    const backlog = async () => {
      const row = await sql<{ pending: number; oldest: number | null }>`
        select count(*) as pending, min(created_at) as oldest from jobs where queue = 'webhook_delivery'`.execute(
        db.kysely,
      );
      const first = row.rows[0];
      return { pending: Number(first?.pending ?? 0), oldest: first?.oldest === null ? null : Number(first?.oldest) };
    };
    log('== writes with one webhook endpoint subscribed to every event');
    for (const scenario of scenarios) {
      const samples: { pending: number; ageS: number }[] = [];
      const sampler = setInterval(() => {
        void backlog().then(({ pending, oldest }) =>
          samples.push({ pending, ageS: oldest === null ? 0 : (Date.now() - oldest) / 1000 }),
        );
      }, 1000);
      const before = hooks.count();
      const started = performance.now();
      const row = await measure(
        `${scenario.name}${WITH_ENDPOINT}`,
        {
          url: `${server.url}${scenario.path}`,
          method: 'POST',
          headers: { authorization: `Bearer ${scenario.token}` },
          bodies: (run) => scenario.many((n) => scenario.body(n, `hook-${run}-${n}`))(),
        },
        server.pids,
        database,
      );
      clearInterval(sampler);
      const seconds = (performance.now() - started) / 1000;
      const perSecond = (hooks.count() - before) / seconds;
      const drainStarted = performance.now();
      let drainS: number | null = null;
      while (performance.now() - drainStarted < 120_000) {
        if ((await backlog()).pending === 0) {
          drainS = (performance.now() - drainStarted) / 1000;
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      const figures: DeliveryFigures = {
        scenario: scenario.name,
        perSecond,
        oldestMaxS: Math.max(0, ...samples.map((s) => s.ageS)),
        pendingFirst: samples[0]?.pending ?? 0,
        pendingLast: samples.at(-1)?.pending ?? 0,
        drainS,
      };
      log(
        `    deliveries: ${perSecond.toFixed(0)}/s, oldest pending at most ${figures.oldestMaxS.toFixed(1)} s, ` +
          `pending ${figures.pendingFirst} → ${figures.pendingLast}, drained ${drainS === null ? 'not within 120 s' : `in ${drainS.toFixed(1)} s`}`,
      );
      if (row) rows.push(row);
      deliveries.push(figures);
    }
  } finally {
    // The later measurements (WORKERS=2) are of the writes without it, as before it was added.
    if (endpointId !== null) {
      await fetch(`${server.url}/v1/webhook_endpoints/${endpointId}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${setup.account.apiKey}` },
      });
    }
    await db.close();
    await hooks.close();
  }
  return { rows, deliveries };
}
