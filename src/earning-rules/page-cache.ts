import { AccountCache, CACHE_MAX_AGE_MS } from '../storage/change-feed.js';
import type { Db } from '../storage/db.js';
import { findRulesVersion } from './repository.js';

/**
 * The earning-rules page cache, in one place: serialised pages kept with the account's rules
 * version they were built at, and the versions themselves (on PostgreSQL kept until a change
 * notification, on SQLite until another connection commits (PRAGMA data_version), at most
 * CACHE_MAX_AGE_MS either way). A page is served
 * only while its version is still the account's current one, so a cached page is always exact:
 * any change to the account's rules, by any process or by the CLI, raises the version in the
 * same transaction.
 */
export class RulesPages {
  private readonly pages: PageCache<Buffer>;
  private readonly versions: AccountCache<number>;

  constructor(
    private readonly db: Db,
    maxBytes: number,
  ) {
    this.pages = new PageCache(maxBytes);
    this.versions = new AccountCache(db.changes, 'earning_rules', CACHE_MAX_AGE_MS);
  }

  /**
   * The serialised page stored under `key` for the account, or the one `build` makes (then kept),
   * as UTF-8 bytes: encoded once, not on every answer.
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

  /** The account's earning-rules version; -1 for an account that does not exist. */
  async version(accountId: number): Promise<number> {
    return this.versions.get(accountId, async () => (await findRulesVersion(this.db.kysely, accountId)) ?? -1);
  }

  /** After a change made by this process: its versions are read again (all accounts' when none is named). */
  changed(accountId?: number): void {
    this.versions.forget(accountId);
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
