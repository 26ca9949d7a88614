import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createTestDb, testEngine } from '../helpers/app.js';

describe.skipIf(testEngine !== 'postgres')('PostgreSQL table settings', () => {
  it('leaves room in customer_identities pages, so updates stay on their page (HOT)', async () => {
    const test = await createTestDb();
    try {
      const { rows } = await sql<{ options: string[] | null }>`
        select reloptions as options from pg_class
        where oid = 'customer_identities'::regclass`.execute(test.db.kysely);
      expect(rows[0]?.options).toContain('fillfactor=90');
    } finally {
      await test.destroy();
    }
  });
});
