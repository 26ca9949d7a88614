import http from 'node:http';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { createTestDatabaseUrl, type Tenant, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { seedTenant } from '../helpers/seed.js';
import type { ServerProcess } from '../helpers/server-process.js';
import { CREATE_OR_UPDATE, exitWithin, NoResponse, openStore, Servers, samples, send, sendJson } from './support.js';

// SIGKILL a real server process while many clients write through create_or_update, restart it
// on the same database, and check: every acknowledged write is there with its content, nothing
// is duplicated or half-written, and the database passes its own integrity checks. On SQLite the
// writes share durable commits (group commit): the test checks that they did.

const ROUNDS = 3;
const CLIENTS = 24;
/** Acknowledged writes per round before the kill (the kill lands while writes are in flight). */
const ACKS_BEFORE_KILL = 80;
const EMAILS = 12;

interface Write {
  distinctId: string;
  firstName: string;
  /** The `v` property sent: identifies which write the stored row reflects. */
  version: number;
  /** Email at creation (the identity's customer is the one with this email). */
  email: string;
}

/** What the clients know: acknowledged writes, and the writes whose outcome they never learned. */
class Ledger {
  /** distinct_id -> the last acknowledged write. */
  readonly acked = new Map<string, Write>();
  /** distinct_id -> writes sent after the last acknowledgement that got no answer. */
  readonly unknown = new Map<string, Write[]>();
  acks = 0;

  ack(write: Write): void {
    this.acked.set(write.distinctId, write);
    this.unknown.delete(write.distinctId);
    this.acks++;
  }

  lost(write: Write): void {
    this.unknown.set(write.distinctId, [...(this.unknown.get(write.distinctId) ?? []), write]);
  }
}

const normalize = (email: string) => email.trim().toLowerCase();

/** One client: creates identities and updates its own, until its connection is refused. */
async function client(server: ServerProcess, tenant: Tenant, ledger: Ledger, id: string, agent: http.Agent) {
  const mine: string[] = [];
  for (let n = 0; ; n++) {
    const update = mine.length > 0 && Math.random() < 0.3;
    const distinctId = update ? mine[Math.floor(Math.random() * mine.length)]! : `${id}-${n}`;
    const k = Math.floor(Math.random() * EMAILS);
    const email = [`shared${k}@example.com`, ` Shared${k}@Example.COM `, `SHARED${k}@EXAMPLE.COM`][n % 3]!;
    const write: Write = {
      distinctId,
      firstName: `${id}-${n}`,
      version: n,
      email: update ? ledger.acked.get(distinctId)!.email : email,
    };
    try {
      const reply = await sendJson(
        server.url,
        'POST',
        CREATE_OR_UPDATE,
        tenant.accessToken,
        { customer_identity: { distinct_id: distinctId, email, first_name: write.firstName, properties: { v: n } } },
        { agent, timeoutMs: 10_000 },
      );
      // A momentary overload (503) refuses the write: it is simply not acknowledged.
      if (reply.status === 503) continue;
      if (reply.status !== 200 && reply.status !== 201) {
        throw new Error(`write refused before the crash: ${reply.status} ${reply.body}`);
      }
      ledger.ack(write);
      if (!update) mine.push(distinctId);
    } catch (error) {
      if (!(error instanceof NoResponse)) throw error;
      ledger.lost(write);
      return; // the server is gone
    }
  }
}

describe(`crash safety: SIGKILL under write load (${testEngine})`, () => {
  const servers = new Servers();
  let database: TestDatabaseUrl;
  let tenant: Tenant;
  let store: Db;

  beforeAll(async () => {
    database = await createTestDatabaseUrl();
    tenant = await seedTenant(database.url, 'Crash shop');
  });
  afterAll(async () => {
    await store?.close();
    await servers.killAll();
    await database?.drop();
  });

  it(`keeps every acknowledged write across ${ROUNDS} kills, duplicates nothing, and passes integrity checks`, async () => {
    const ledger = new Ledger();
    const grouped = { commits: 0, transactions: 0 };
    const env = { DATABASE_URL: database.url, RATE_LIMIT_PER_SECOND: '0' };
    let server = await servers.start(env);
    for (let round = 0; round < ROUNDS; round++) {
      const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });
      const target = ledger.acks + ACKS_BEFORE_KILL;
      const clients = Array.from({ length: CLIENTS }, (_, i) =>
        client(server, tenant, ledger, `r${round}c${i}`, agent),
      );
      while (ledger.acks < target) await new Promise((resolve) => setTimeout(resolve, 5));
      if (testEngine === 'sqlite') {
        const counted = samples((await send(server.url, { path: '/metrics' })).body);
        grouped.commits += counted.get('loyalty_sqlite_commits_total') ?? 0;
        grouped.transactions += counted.get('loyalty_sqlite_committed_transactions_total') ?? 0;
      }
      server.child.kill('SIGKILL');
      await Promise.all(clients);
      agent.destroy();
      expect(await exitWithin(server, 10_000)).toBeNull(); // killed by the signal, not exited
      expect(server.child.signalCode).toBe('SIGKILL');
      server = await servers.start(env);
      // The restarted server answers for an acknowledged identity with the same customer.
      const [someId, someWrite] = [...ledger.acked][Math.floor(Math.random() * ledger.acked.size)]!;
      const again = await sendJson(server.url, 'POST', CREATE_OR_UPDATE, tenant.accessToken, {
        customer_identity: { distinct_id: someId, email: someWrite.email },
      });
      expect(again.status).toBe(200);
      // That request changed the identity's email to the same address; nothing else.
    }

    store = openStore(database.url);
    const identities = (
      await sql<{ distinct_id: string; first_name: string; properties: string; customer_id: number }>`
        select distinct_id, first_name, properties, customer_id from customer_identities
        where account_id = ${tenant.accountId}`.execute(store.kysely)
    ).rows;
    const customers = (
      await sql<{ id: number; email_normalized: string }>`
        select id, email_normalized from customers where account_id = ${tenant.accountId}`.execute(store.kysely)
    ).rows;
    const byDistinctId = new Map(identities.map((row) => [row.distinct_id, row]));
    const emailOf = new Map(customers.map((row) => [Number(row.id), row.email_normalized]));

    // Nothing duplicated: one identity per distinct_id, one customer per normalised email.
    expect(byDistinctId.size).toBe(identities.length);
    expect(new Set(customers.map((c) => c.email_normalized)).size).toBe(customers.length);
    expect(customers.length).toBeLessThanOrEqual(EMAILS);

    // Every acknowledged write is there: the acknowledged content, or a later write whose
    // answer was lost in the crash.
    const missing: string[] = [];
    for (const [distinctId, write] of ledger.acked) {
      const row = byDistinctId.get(distinctId);
      const allowed = [write, ...(ledger.unknown.get(distinctId) ?? [])];
      const version = row ? (JSON.parse(row.properties) as { v?: number }).v : undefined;
      const match = row && allowed.find((w) => w.firstName === row.first_name && w.version === version);
      if (!match) missing.push(`${distinctId}: ${row ? JSON.stringify(row) : 'absent'}`);
      // Linked to the customer of the email it was created with.
      else if (emailOf.get(Number(row.customer_id)) !== normalize(write.email)) {
        missing.push(`${distinctId}: linked to customer ${row.customer_id} (${emailOf.get(Number(row.customer_id))})`);
      }
    }
    expect(missing).toEqual([]);
    // Nothing the clients did not send: every stored identity is acknowledged or was in flight.
    for (const row of identities) {
      expect(ledger.acked.has(row.distinct_id) || ledger.unknown.has(row.distinct_id), row.distinct_id).toBe(true);
    }

    // Nothing half-written: no identity without its customer (of the same account), no customer
    // left without the identity it was created for.
    const orphans = await sql<{ n: number }>`
      select count(*) as n from customer_identities i left join customers c on c.id = i.customer_id
      where c.id is null or c.account_id <> i.account_id`.execute(store.kysely);
    expect(Number(orphans.rows[0]!.n)).toBe(0);
    const lonely = await sql<{ n: number }>`
      select count(*) as n from customers c
      where not exists (select 1 from customer_identities i where i.customer_id = c.id)`.execute(store.kysely);
    expect(Number(lonely.rows[0]!.n)).toBe(0);

    if (testEngine === 'sqlite') {
      const integrity = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(store.kysely);
      expect(integrity.rows).toEqual([{ integrity_check: 'ok' }]);
      const foreignKeys = await sql`pragma foreign_key_check`.execute(store.kysely);
      expect(foreignKeys.rows).toEqual([]);
    } else {
      // The unique indexes the guarantees rest on are present and valid after the crashes.
      const indexes = await sql<{ indexdef: string; indisvalid: boolean }>`
        select pg_get_indexdef(x.indexrelid) as indexdef, x.indisvalid from pg_index x
        join pg_class t on t.oid = x.indrelid join pg_namespace n on n.oid = t.relnamespace
        where n.nspname = current_schema() and t.relname in ('customers', 'customer_identities') and x.indisunique`.execute(
        store.kysely,
      );
      const unique = indexes.rows.filter((r) => r.indisvalid).map((r) => r.indexdef);
      expect(unique.some((d) => /\(account_id, distinct_id\)/.test(d))).toBe(true);
      expect(unique.some((d) => /\(account_id, email_normalized\)/.test(d))).toBe(true);
    }
    if (testEngine === 'sqlite') {
      // The writes shared commits: more transactions committed than COMMITs run.
      expect(grouped.commits).toBeGreaterThan(0);
      expect(grouped.transactions).toBeGreaterThan(grouped.commits * 1.5);
    }
    console.log(
      `crash (${testEngine}): ${ROUNDS} kills, ${ledger.acks} acknowledged writes, ${identities.length} identities, ` +
        `${customers.length} customers, ${[...ledger.unknown.values()].flat().length} writes in flight at a kill` +
        (testEngine === 'sqlite' ? `, ${grouped.transactions} transactions in ${grouped.commits} commits` : ''),
    );
  }, 120_000);
});
