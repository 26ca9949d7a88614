/**
 * Serialised pages of earning rules, each kept with the account's rules version it was built at.
 * A page is served from here only while that version is still the account's current one, so a
 * cached page is always exact: any change to the account's rules, made by any process or by the
 * CLI, raises the version in the same transaction. Bounded by bytes, least recently used first out.
 */
export class PageCache {
  private readonly entries = new Map<string, { version: number; body: string }>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** The page stored under `key` at `version`, or undefined. */
  get(key: string, version: number): string | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.version !== version) {
      this.remove(key);
      return undefined;
    }
    // Map keeps insertion order: re-inserting marks the entry as the most recently used.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.body;
  }

  set(key: string, version: number, body: string): void {
    if (body.length > this.maxBytes) return;
    this.remove(key);
    this.entries.set(key, { version, body });
    this.bytes += body.length;
    for (const [oldest] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.remove(oldest);
    }
  }

  private remove(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.bytes -= entry.body.length;
    this.entries.delete(key);
  }
}
