import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { type Tenant, testEngine } from '../helpers/app.js';
import { referralSettingsFixture } from '../helpers/fixtures.js';
import { seedTenant } from '../helpers/seed.js';
import type { ServerProcess } from '../helpers/server-process.js';
import { CREATE_OR_UPDATE, openStore, sendJson, serverOnNewDatabase, tally } from './support.js';

// The backups docs/operations.md recommends, taken while a real server process is writing:
// SQLite's `.backup` and `VACUUM INTO` (sqlite3 CLI) and PostgreSQL's pg_dump. Writers are not
// refused meanwhile, each copy is consistent and holds everything acknowledged before it began,
// and a server started on the copy serves it.

const run = promisify(execFile);
const WRITERS = 8;

/** Clients that create identities until stopped; what they were told, by distinct_id. */
function startWriters(server: ServerProcess, tenant: Tenant) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: WRITERS });
  const acked = new Set<string>();
  const sent = new Set<string>();
  const statuses: number[] = [];
  let stopping = false;
  const loops = Array.from({ length: WRITERS }, async (_, w) => {
    for (let n = 0; !stopping; n++) {
      const id = `b${w}-${n}`;
      sent.add(id);
      const reply = await sendJson(
        server.url,
        'POST',
        CREATE_OR_UPDATE,
        tenant.accessToken,
        { customer_identity: { distinct_id: id, email: `b${n % 5}@example.com`, properties: { w, n } } },
        { agent },
      );
      statuses.push(reply.status);
      if (reply.status === 201) acked.add(id);
    }
  });
  return {
    acked,
    sent,
    statuses,
    async stop() {
      stopping = true;
      await Promise.all(loops);
      agent.destroy();
    },
  };
}

async function waitForAcks(acked: Set<string>, count: number): Promise<void> {
  while (acked.size < count) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe(`backups while the server writes (${testEngine})`, () => {
  const fixture = serverOnNewDatabase((url) =>
    seedTenant(url, 'Backed-up shop', (services, t) =>
      services.referralSettings.set(t.accountId, referralSettingsFixture),
    ),
  );
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup().catch(() => {});
  });

  /** Checks a copy: consistent, complete up to its start, and servable. */
  async function verifyCopy(url: string, ackedBefore: Set<string>, sent: Set<string>) {
    const { servers, seeded: tenant } = fixture;
    const store = openStore(url);
    try {
      const { rows } = await sql<{ distinct_id: string }>`select distinct_id from customer_identities`.execute(
        store.kysely,
      );
      const copied = new Set(rows.map((r) => r.distinct_id));
      expect([...ackedBefore].filter((id) => !copied.has(id))).toEqual([]);
      expect([...copied].filter((id) => !sent.has(id))).toEqual([]);
      const orphans = await sql<{ n: number }>`
        select count(*) as n from customer_identities i left join customers c on c.id = i.customer_id
        where c.id is null`.execute(store.kysely);
      expect(Number(orphans.rows[0]!.n)).toBe(0);
      if (url.startsWith('sqlite:')) {
        const integrity = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(store.kysely);
        expect(integrity.rows).toEqual([{ integrity_check: 'ok' }]);
      }
    } finally {
      await store.close();
    }
    const restored = await servers.start({ DATABASE_URL: url, RATE_LIMIT_PER_SECOND: '0' });
    const settings = await sendJson(restored.url, 'GET', '/v1/referral_settings', tenant.apiKey);
    expect(settings.json).toEqual({ referral_settings: referralSettingsFixture });
    const known = [...ackedBefore][0]!;
    const update = await sendJson(restored.url, 'POST', CREATE_OR_UPDATE, tenant.accessToken, {
      customer_identity: { distinct_id: known, email: 'b0@example.com' },
    });
    expect(update.status).toBe(200);
    expect(await restored.stop('SIGTERM')).toBe(0);
  }

  it.skipIf(testEngine !== 'sqlite')('copies with sqlite3 .backup and VACUUM INTO, online', async () => {
    const { database, server, seeded: tenant } = fixture;
    const file = database.url.slice('sqlite:'.length);
    const dir = mkdtempSync(join(tmpdir(), 'loyalty-backup-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const writers = startWriters(server, tenant);
    try {
      await waitForAcks(writers.acked, 40);
      const beforeBackup = new Set(writers.acked);
      await run('sqlite3', [file, `.backup '${join(dir, 'backup.db')}'`]);
      await waitForAcks(writers.acked, beforeBackup.size + 20); // writes went on
      const beforeVacuum = new Set(writers.acked);
      await run('sqlite3', [file, `VACUUM INTO '${join(dir, 'vacuumed.db')}'`]);
      await waitForAcks(writers.acked, beforeVacuum.size + 20);
      await writers.stop();
      console.log(`backup (sqlite): writes during the copies ${JSON.stringify(tally(writers.statuses, (s) => s))}`);
      expect(writers.statuses.every((s) => s === 201)).toBe(true);
      await verifyCopy(`sqlite:${join(dir, 'backup.db')}`, beforeBackup, writers.sent);
      await verifyCopy(`sqlite:${join(dir, 'vacuumed.db')}`, beforeVacuum, writers.sent);
    } finally {
      await writers.stop();
    }
  });

  it.skipIf(testEngine !== 'postgres')('copies with pg_dump, online, and restores with psql', async () => {
    const { database, server, seeded: tenant } = fixture;
    const direct = new URL(database.url);
    const schema = direct.searchParams.get('options')!.replace('-c search_path=', '');
    direct.searchParams.delete('options');
    const base = direct.toString();
    // Restored beside the original, in a schema that the stale-schema cleanup also knows.
    const copy = `${schema}_copy`;
    cleanups.push(async () => {
      const client = new pg.Client({ connectionString: base });
      await client.connect();
      await client.query(`drop schema if exists ${copy} cascade`);
      await client.end();
    });
    const writers = startWriters(server, tenant);
    try {
      await waitForAcks(writers.acked, 40);
      const beforeDump = new Set(writers.acked);
      const { stdout: dump } = await run(
        'pg_dump',
        ['--dbname', base, '--schema', schema, '--no-owner', '--no-privileges'],
        { maxBuffer: 64 * 1024 * 1024 },
      );
      await waitForAcks(writers.acked, beforeDump.size + 20);
      await writers.stop();
      console.log(`backup (postgres): writes during the dump ${JSON.stringify(tally(writers.statuses, (s) => s))}`);
      expect(writers.statuses.every((s) => s === 201)).toBe(true);
      const restore = execFile('psql', ['--dbname', base, '--set', 'ON_ERROR_STOP=1', '--quiet', '--file', '-']);
      const restored = new Promise<number | null>((resolve) => restore.on('exit', resolve));
      restore.stdin!.end(dump.replaceAll(schema, copy));
      expect(await restored).toBe(0);
      const url = new URL(database.url);
      url.searchParams.set('options', `-c search_path=${copy}`);
      await verifyCopy(url.toString(), beforeDump, writers.sent);
    } finally {
      await writers.stop();
    }
  });
});
