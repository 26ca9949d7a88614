/**
 * The access-token revocations this process makes, as its credential cache must know them. Every
 * path of the server that revokes access tokens (OAuth revocation, refresh rotation and reuse,
 * disconnecting an app) runs its transaction through `around`: a token read while one is under
 * way, or before one that has finished since, is not served from the cache. So a revocation this
 * process has answered is refused by its next request; in other processes (and after the `loyalty`
 * command) a cached token lives at most CREDENTIAL_CACHE_MS (the contract's 1 s).
 */
export class TokenRevocations {
  private underWay = 0;
  private count = 0;
  private readonly startListeners = new Set<() => void>();

  /** Runs `revoke` (a committed transaction when it resolves) as a revocation. */
  async around<T>(revoke: () => Promise<T>): Promise<T> {
    this.underWay++;
    this.count++;
    for (const listener of this.startListeners) listener();
    try {
      return await revoke();
    } finally {
      this.underWay--;
      this.count++;
    }
  }

  /** A mark to compare with later; null while a revocation is under way (nothing may be kept). */
  mark(): number | null {
    return this.underWay > 0 ? null : this.count;
  }

  /** Whether no revocation has started or finished since `mark` was taken, and none is under way. */
  noneSince(mark: number | null): boolean {
    return mark !== null && this.underWay === 0 && this.count === mark;
  }

  /** Calls `listener` as each revocation starts (a load begun before it must not be shared). */
  onStart(listener: () => void): void {
    this.startListeners.add(listener);
  }
}
