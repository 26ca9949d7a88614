/** Waits `ms` milliseconds: for pacing (a client's pace, a rate-limit window), not for a state. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Polls `check` until it returns true or `timeoutMs` passes; returns whether it did. What a test
 * waits for (a log line, an expiry, a freed slot) is asked for, never assumed after a fixed sleep.
 */
export async function eventually(check: () => Promise<boolean>, timeoutMs: number, everyMs = 100): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return true;
    if (Date.now() > deadline) return false;
    await sleep(everyMs);
  }
}
