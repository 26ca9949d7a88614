import pg from 'pg';

/** Every schema a test makes starts with this, so a run can clean up what a crash left behind. */
export const TEST_SCHEMA_PREFIX = 'loyalty_test_';

/** Drops the test schemas of processes that no longer run (left over by a killed run). */
export async function dropStaleSchemas(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ nspname: string }>(
      `select nspname from pg_namespace where nspname like '${TEST_SCHEMA_PREFIX}%'`,
    );
    let dropped = 0;
    for (const { nspname } of rows) {
      const pid = Number(nspname.slice(TEST_SCHEMA_PREFIX.length).split('_')[0]);
      if (isAlive(pid)) continue;
      await client.query(`drop schema if exists ${nspname} cascade`);
      dropped++;
    }
    return dropped;
  } finally {
    await client.end();
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
