// The Node floor of `npm run bench` on PostgreSQL: what any Node service on Fastify and pg pays
// for a write route, measured beside the service. One POST route that runs the statements the
// service's route ran (STATEMENTS_FILE, recorded by bench/limits/capture.ts), in the order recorded
// (its BEGIN and COMMIT too), on a pool of the service's default size with the service's named
// statements, with each request's values varied as the ceilings vary them, and answers the last
// rows returned as JSON. No authentication, validation, business logic, metrics or logging: the
// service can come near this figure but not pass it.
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import pg from 'pg';
import { nameStatements } from '../src/storage/postgres-statements.js';
import { remember, type Statement, vary } from './replay.js';

/** Replay numbers of the floor, apart from the better-sqlite3 ceiling's (round × 10,000,000). */
const FIRST_REPLAY = 900_000_000;
/** The service's default pool (DATABASE_POOL_SIZE). */
const POOL_SIZE = 10;

const sequences = JSON.parse(readFileSync(process.env.STATEMENTS_FILE as string, 'utf8')) as Statement[][];
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: POOL_SIZE });
nameStatements(pool);

let replay = FIRST_REPLAY;

async function run(): Promise<unknown[]> {
  const i = replay++;
  const ids = new Map<number, number>();
  let last: unknown[] = [];
  const client = await pool.connect();
  try {
    for (const statement of sequences[i % sequences.length] ?? []) {
      const params = vary(statement.params, i, ids) as unknown[];
      const { rows } =
        params.length > 0 ? await client.query(statement.sql, params) : await client.query(statement.sql);
      remember(statement, rows, ids);
      if (rows.length > 0) last = rows;
    }
    return last;
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

const app = Fastify({ logger: { level: 'warn' } });
app.post('/*', async (_request, reply) => reply.code(201).send(await run()));
await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`listening ${(app.server.address() as { port: number }).port}\n`);
process.on('SIGTERM', () => void app.close().then(() => pool.end().then(() => process.exit(0))));
