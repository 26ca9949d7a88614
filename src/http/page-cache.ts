/**
 * Serialised answers kept per account, each with the version of the account's data it was built
 * from (earning rules: the rules version, raised in the transaction of every change to them). An
 * answer is served only while its version is still the account's current one, so a cached answer
 * is always exact; bytes are encoded once, not on every answer. HTTP's business: the domain hands
 * out pages and versions, the route keeps the bytes.
 */
export class VersionedPages {
  private readonly pages: PageCache<Buffer>;

  constructor(
    private readonly version: (accountId: number) => Promise<number>,
    maxBytes: number,
  ) {
    this.pages = new PageCache(maxBytes);
  }

  /**
   * The serialised answer stored under `key` for the account, or the one `build` makes (then
   * kept), as UTF-8 bytes.
   */
  async get(accountId: number, key: string, build: () => Promise<string>): Promise<Buffer> {
    // Read the version before the page: the page is then at least as new as the version it is
    // stored under, and a change after this read raises the version and retires the entry.
    const version = await this.version(accountId);
    const cacheKey = `${accountId}:${key}`;
    let body = this.pages.get(cacheKey, version);
    if (body === undefined) {
      body = Buffer.from(await build());
      this.pages.set(cacheKey, version, body);
    }
    return body;
  }
}

/**
 * Serialised pages, each kept with the version it was built at; bounded by bytes, least recently
 * used first out.
 */
export class PageCache<Body extends string | Buffer = string> {
  private readonly entries = new Map<string, { version: number; body: Body }>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** The page stored under `key` at `version`, or undefined. */
  get(key: string, version: number): Body | undefined {
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

  set(key: string, version: number, body: Body): void {
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
