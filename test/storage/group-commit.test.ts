import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { type Generated, type Kysely, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toContractError } from '../../src/error-mapping.js';
import { type Db, openDb } from '../../src/storage/db.js';
import { GroupRolledBack } from '../../src/storage/sqlite-driver.js';
import { testEngine } from '../helpers/app.js';

// SQLite's group commit (src/storage/sqlite-driver.ts): transactions that finish together share
// one durable COMMIT, each is acknowledged only once that COMMIT returned, one that fails takes
// back only its own work, and nothing outside a transaction sees the group before it commits.

interface Notes {
  notes: { id: Generated<number>; body: string };
}

describe.skipIf(testEngine !== 'sqlite')('group commit on SQLite', () => {
  let dir: string;
  let db: Db;
  let kysely: Kysely<Notes>;
  /** Another connection to the file: sees exactly what is committed. */
  let outside: SqliteDatabase.Database;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loyalty-group-'));
    db = openDb(`sqlite:${join(dir, 'test.db')}`);
    kysely = db.kysely as unknown as Kysely<Notes>;
    await sql`create table notes (id integer primary key, body text not null unique)`.execute(kysely);
    outside = new SqliteDatabase(join(dir, 'test.db'));
  });
  afterEach(async () => {
    outside.close();
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const committed = () => outside.prepare('select body from notes order by id').pluck().all();
  const insert = (trx: Kysely<Notes>, body: string) => trx.insertInto('notes').values({ body }).execute();

  it('commits transactions that finish together once, and acknowledges each only after that commit', async () => {
    const before = { ...db.sqlite!.stats };
    const seenAtAcknowledgement: unknown[][] = [];
    await Promise.all(
      ['a', 'b', 'c', 'd'].map((body) =>
        kysely
          .transaction()
          .execute((trx) => insert(trx, body))
          .then(() => seenAtAcknowledgement.push(committed())),
      ),
    );
    expect(db.sqlite!.stats.commits - before.commits).toBe(1);
    expect(db.sqlite!.stats.transactions - before.transactions).toBe(4);
    for (const seen of seenAtAcknowledgement) expect(seen).toEqual(['a', 'b', 'c', 'd']);
  });

  it('rolls back only the transaction that failed; the others of its group commit', async () => {
    const outcomes = await Promise.allSettled([
      kysely.transaction().execute((trx) => insert(trx, 'kept')),
      kysely.transaction().execute(async (trx) => {
        await insert(trx, 'taken back');
        throw new Error('refused');
      }),
      kysely.transaction().execute(async (trx) => {
        await insert(trx, 'second');
        await insert(trx, 'kept'); // unique: fails, and with it this transaction's first insert
      }),
      kysely.transaction().execute((trx) => insert(trx, 'also kept')),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect(committed()).toEqual(['kept', 'also kept']);
  });

  it('shows the open group to the transactions after it, never to reads outside a transaction', async () => {
    let readOutside: unknown;
    let readInside: unknown;
    await Promise.all([
      kysely.transaction().execute((trx) => insert(trx, 'pending')),
      kysely.transaction().execute(async (trx) => {
        // The first transaction is done but its group is not committed yet.
        readOutside = await kysely.selectFrom('notes').select('body').execute();
        readInside = await trx.selectFrom('notes').select('body').execute();
      }),
    ]);
    expect(readOutside).toEqual([]);
    expect(readInside).toEqual([{ body: 'pending' }]);
  });

  it('answers a failed transaction only once what it saw is committed, so that a read after it sees it too', async () => {
    const first = kysely.transaction().execute((trx) => insert(trx, 'first'));
    const duplicate = kysely
      .transaction()
      .execute((trx) => insert(trx, 'first'))
      .catch(async () => kysely.selectFrom('notes').select('body').execute());
    await first;
    expect(await duplicate).toEqual([{ body: 'first' }]);
  });

  it('fails every transaction of a group SQLite rolled back whole, and commits the next group', async () => {
    await sql`create trigger veto before insert on notes when new.body = 'veto'
      begin select raise(rollback, 'vetoed'); end`.execute(kysely);
    const outcomes = await Promise.allSettled([
      kysely.transaction().execute((trx) => insert(trx, 'lost with the group')),
      insert(kysely, 'a write outside a transaction, lost with the group'),
      kysely.transaction().execute((trx) => insert(trx, 'veto')),
    ]);
    expect(outcomes[0]).toMatchObject({ status: 'rejected', reason: expect.any(GroupRolledBack) });
    expect(outcomes[1]).toMatchObject({ status: 'rejected', reason: expect.any(GroupRolledBack) });
    // Nothing of it was kept: a retry may succeed, so it is answered as a passing outage.
    expect(toContractError((outcomes[0] as PromiseRejectedResult).reason).code).toBe('unavailable');
    expect(outcomes[2]).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ message: 'vetoed' }) });
    // The turn was given back once per transaction: the next ones run one at a time, in order.
    await Promise.all([
      kysely.transaction().execute((trx) => insert(trx, 'after')),
      insert(kysely, 'outside a transaction'),
      kysely.transaction().execute(async (trx) => {
        await insert(trx, 'last');
        expect(await trx.selectFrom('notes').select('body').execute()).toHaveLength(3);
      }),
    ]);
    expect(committed()).toEqual(['after', 'outside a transaction', 'last']);
  });

  it('fails a transaction that rolled back with GroupRolledBack when its group then fails to commit', async () => {
    // A foreign key checked at COMMIT: the group's COMMIT fails, after both transactions were done.
    await sql`create table parents (id integer primary key)`.execute(kysely);
    await sql`create table children (id integer primary key,
      parent_id integer references parents (id) deferrable initially deferred)`.execute(kysely);
    const outcomes = await Promise.allSettled([
      sql`insert into children (parent_id) values (${99})`.execute(kysely),
      kysely.transaction().execute(async (trx) => {
        await insert(trx, 'saw the orphan');
        throw new Error('its own reason');
      }),
    ]);
    expect(outcomes[0]).toMatchObject({ status: 'rejected', reason: { code: 'SQLITE_CONSTRAINT_FOREIGNKEY' } });
    // What it saw of the group never existed: not its own reason, but one a retry gets past.
    expect(outcomes[1]).toMatchObject({ status: 'rejected', reason: expect.any(GroupRolledBack) });
    await kysely.transaction().execute((trx) => insert(trx, 'after'));
    expect(committed()).toEqual(['after']);
    expect(outside.prepare('select count(*) from children').pluck().get()).toBe(0);
  });

  it('waits for another process’s write lock without stopping reads', async () => {
    await insert(kysely, 'before');
    outside.exec('begin immediate');
    const write = kysely.transaction().execute((trx) => insert(trx, 'waited'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await kysely.selectFrom('notes').select('body').execute()).toEqual([{ body: 'before' }]);
    outside.exec('commit');
    await write;
    expect(committed()).toEqual(['before', 'waited']);
  });
});
