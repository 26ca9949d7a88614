import { Redis } from 'ioredis';

/**
 * The Redis of the multi-process tests: TEST_REDIS_URL (set by .ci/run). Without it those
 * tests are skipped, and say so.
 */
export const testRedisUrl = process.env.TEST_REDIS_URL ?? null;

if (!testRedisUrl) {
  console.warn(
    '[loyalty] Redis tests skipped: TEST_REDIS_URL is not set (for example TEST_REDIS_URL=redis://127.0.0.1:6379).',
  );
}

/** Fails clearly when TEST_REDIS_URL is set but nothing answers there. */
export async function assertRedisReachable(url: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 3000 });
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    throw new Error(`TEST_REDIS_URL=${url} does not answer: ${(error as Error).message}`);
  } finally {
    redis.disconnect();
  }
}
