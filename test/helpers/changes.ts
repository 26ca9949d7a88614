import type { Db } from '../../src/storage/db.js';

/**
 * Runs `write` (a change made through another connection, as another process would) and waits
 * until `db`'s change feed has delivered a notification for it, so that what `db` serves next
 * must reflect it. On SQLite a commit is seen by the next read (SqliteChanges), and while the
 * PostgreSQL feed is not live nothing is cached: no wait.
 */
export async function changeReaching<T>(db: Db, accountId: number, write: () => Promise<T>): Promise<T> {
  const feed = db.changes;
  if (db.dialect === 'sqlite' || !feed?.isLive()) return write();
  let stop = () => {};
  const delivered = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no change notification within 5 s')), 5000);
    const unsubscribe = feed.onChange((_kind, changed) => {
      if (changed !== accountId) return;
      clearTimeout(timer);
      resolve();
    });
    stop = () => {
      clearTimeout(timer);
      unsubscribe();
    };
  });
  try {
    const result = await write();
    await delivered;
    return result;
  } finally {
    stop();
  }
}
