import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createTestDatabase } from '../helpers/database.js';

// Issue 50, point 4: the earning-rules read allocated what it did before, yet its garbage cost 10
// times the time. Send batching kept the replies of a turn in one long-lived Set and emptied it
// with clear(): once that Set's table was in the old generation, each clear() left the previous
// table (dead, but only a full collection finds that out) still pointing at the turn's replies,
// so every young collection kept them alive, with their requests, sockets and answers, and moved
// about a quarter of all a request allocated to the old generation, there until a full collection.
// test/helpers/promotion.mjs counts the bytes the young collections move to the old generation per
// request, over real sockets: 4,400 with the long-lived Set, about 40 since.

const run = promisify(execFile);
const PROBE = fileURLToPath(new URL('../helpers/promotion.mjs', import.meta.url));

describe('send batching', () => {
  it('lets the objects of an answer die young', async () => {
    const database = await createTestDatabase();
    try {
      const { stdout } = await run(process.execPath, [PROBE], {
        env: { PATH: process.env.PATH ?? '', DATABASE_URL: database.url },
      });
      const { promotedPerRequest, scavenges } = JSON.parse(stdout) as { promotedPerRequest: number; scavenges: number };
      // Enough young collections to count on, any of which would move the replies of a turn.
      expect(scavenges).toBeGreaterThanOrEqual(3);
      expect(promotedPerRequest).toBeLessThan(1024);
    } finally {
      await database.drop();
    }
  }, 60_000);
});
