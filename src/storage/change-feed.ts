import pg from 'pg';
import { loadOnce } from '../load-once.js';

/** What a change notification is about: data that server processes keep in memory. */
export type ChangeKind = 'referral_settings' | 'earning_rules';

/** The PostgreSQL channel the triggers of migration 0400 notify on. */
export const CHANGES_CHANNEL = 'loyalty_changes';

/** The channel on which processes without a job runner announce new jobs (JobsService.wake). */
export const JOBS_CHANNEL = 'loyalty_jobs';

/** The listening connection's application_name. */
export const FEED_APPLICATION_NAME = 'loyalty change feed';

/** Pause before listening again after the listening connection was lost. */
const RECONNECT_DELAY_MS = 1000;

type Listener = (kind: ChangeKind, accountId: number) => void;

/** What an AccountCache needs to know of changes made by other processes. */
export interface Changes {
  /** True while every change is known; a cache keeps nothing otherwise. */
  isLive(): boolean | Promise<boolean>;
  /**
   * As `isLive`, answered at once: for a write transaction, which must not wait for a later turn
   * of the event loop (on SQLite that would let its commit group commit under it, see
   * SqliteChanges). May cost a reading of its own.
   */
  isLiveNow(): boolean;
  /** Calls `listener` for each change of one account's data; returns how to stop. */
  onChange(listener: Listener): () => void;
  /** Calls `listener` whenever changes may have been missed: forget everything cached. */
  onReset(listener: () => void): void;
}

/**
 * Every change to cached data, made by any process on any node, as PostgreSQL delivers it: the
 * triggers of migration 0400 `NOTIFY` at each commit that changes an account's referral settings
 * or earning rules, and this feed `LISTEN`s on a connection of its own.
 *
 * A notification is lost only with the connection, so the feed is `live` only while that
 * connection is up: when it drops, every subscriber is told to forget everything (`onReset`) and
 * nothing may be cached until the feed listens again. Started by the first `isLive()`, so a CLI
 * command that caches nothing never opens the connection.
 */
export class ChangeFeed implements Changes {
  private client: pg.Client | null = null;
  private schema = '';
  private live = false;
  private started = false;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;
  private readonly listeners = new Set<Listener>();
  private readonly resetListeners = new Set<() => void>();
  private readonly jobsListeners = new Set<() => void>();

  constructor(private readonly url: string) {}

  /**
   * Calls `listener` when a process that runs no job runner (the `loyalty` command) committed
   * jobs (JobsService.wake, on the jobs channel) or when changes may have been missed; returns how to stop.
   */
  onJobs(listener: () => void): () => void {
    this.jobsListeners.add(listener);
    return () => this.jobsListeners.delete(listener);
  }

  /** True while every change is being delivered; starts listening on the first call. */
  isLive(): boolean {
    if (!this.started && !this.closed) {
      this.started = true;
      void this.connect();
    }
    return this.live;
  }

  isLiveNow(): boolean {
    return this.isLive();
  }

  /** Calls `listener` for each change, from any process, after it commits; returns how to stop. */
  onChange(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Calls `listener` whenever changes may have been missed: forget everything cached. */
  onReset(listener: () => void): void {
    this.resetListeners.add(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.setLive(false);
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    this.retry = null;
    if (this.closed) return;
    const client = new pg.Client({
      connectionString: this.url,
      keepAlive: true,
      connectionTimeoutMillis: 5000,
      // How operators (and the tests) tell this connection apart in pg_stat_activity.
      application_name: FEED_APPLICATION_NAME,
    });
    this.client = client;
    let lost = false;
    const onLost = () => {
      if (lost) return;
      lost = true;
      if (this.client === client) this.client = null;
      this.setLive(false);
      void client.end().catch(() => {});
      if (!this.closed) this.retry = setTimeout(() => void this.connect(), RECONNECT_DELAY_MS).unref();
    };
    client.on('error', onLost);
    client.on('end', onLost);
    client.on('notification', (message) =>
      message.channel === JOBS_CHANNEL ? this.deliverJobs(message.payload) : this.deliver(message.payload),
    );
    try {
      await client.connect();
      const { rows } = await client.query<{ schema: string }>('select current_schema() as schema');
      this.schema = rows[0]?.schema ?? '';
      await client.query(`LISTEN ${CHANGES_CHANNEL}`);
      await client.query(`LISTEN ${JOBS_CHANNEL}`);
      if (lost || this.closed) return;
      // Whatever changed before LISTEN took effect was never notified: start from nothing.
      this.setLive(true);
    } catch {
      onLost();
    }
  }

  /** The payload is "schema kind account_id"; other schemas (other databases) are not ours. */
  private deliver(payload: string | undefined): void {
    const [schema, kind, id] = (payload ?? '').split(' ');
    if (schema !== this.schema || (kind !== 'referral_settings' && kind !== 'earning_rules')) return;
    const accountId = Number(id);
    for (const listener of this.listeners) listener(kind, accountId);
  }

  private deliverJobs(payload: string | undefined): void {
    if (payload !== this.schema) return;
    for (const listener of this.jobsListeners) listener();
  }

  private setLive(live: boolean): void {
    if (live === this.live) return;
    this.live = live;
    for (const listener of this.resetListeners) listener();
    // Notifications may have been missed while the connection was down: look for due jobs.
    if (live) for (const listener of this.jobsListeners) listener();
  }
}

/**
 * Longest an AccountCache keeps a value, notifications or not: the bound on staleness should the
 * listening connection stall without failing (the same second the contract gives revocations).
 */
export const CACHE_MAX_AGE_MS = 1000;

/** Accounts whose value one cache keeps; past this it starts again from empty. */
const ACCOUNT_CACHE_ENTRIES = 100_000;

/**
 * One value per account (its referral settings, its earning-rules version), kept while the
 * changes are known (Changes: the PostgreSQL ChangeFeed, or SqliteChanges) and forgotten when
 * they say the account, or anything, changed. Without them, or while the feed is down, every read
 * loads.
 *
 * A load that was in flight when a change arrived is served but not kept: it may have read the
 * value from before the change. `maxAgeMs` bounds how long a value is kept even so, should the
 * listening connection stall without failing.
 */
export class AccountCache<T> {
  private readonly entries = new Map<number, { value: T; until: number }>();
  // One load per account at a time (see loadOnce).
  private readonly loading = new Map<number, Promise<T>>();
  private epoch = 0;

  constructor(
    private readonly feed: Changes | null,
    kind: ChangeKind,
    private readonly maxAgeMs: number,
  ) {
    feed?.onChange((changed, accountId) => {
      if (changed === kind) this.forget(accountId);
    });
    feed?.onReset(() => this.forget());
  }

  async get(accountId: number, load: () => Promise<T>): Promise<T> {
    const live = this.live();
    return this.kept(accountId, typeof live === 'boolean' ? live : await live, load, () => this.live());
  }

  /**
   * As `get`, without waiting for a later turn of the event loop before loading or answering: for
   * a write transaction (see Changes.isLiveNow).
   */
  getNow(accountId: number, load: () => Promise<T>): Promise<T> {
    const liveNow = () => this.feed?.isLiveNow() ?? false;
    return this.kept(accountId, liveNow(), load, liveNow);
  }

  /** The value kept for the account if the feed is `live`, else loaded (and kept when `stillLive` says so after). */
  private async kept(
    accountId: number,
    live: boolean,
    load: () => Promise<T>,
    stillLive: () => boolean | Promise<boolean>,
  ): Promise<T> {
    if (!live) return load();
    const entry = this.entries.get(accountId);
    const now = performance.now();
    if (entry !== undefined && entry.until > now) return entry.value;
    const epoch = this.epoch;
    return loadOnce(this.loading, accountId, async () => {
      const value = await load();
      const after = stillLive();
      if ((typeof after === 'boolean' ? after : await after) && this.epoch === epoch) {
        if (this.entries.size >= ACCOUNT_CACHE_ENTRIES) this.entries.clear();
        this.entries.set(accountId, { value, until: now + this.maxAgeMs });
      }
      return value;
    });
  }

  /**
   * Whether the feed knows every change: at once from the PostgreSQL feed (no await, so a load
   * starts in the same tick as the request asked), after a turn's reading on SQLite.
   */
  private live(): boolean | Promise<boolean> {
    return this.feed?.isLive() ?? false;
  }

  /**
   * Forgets one account's value, or every value, and any load in flight for it (a request that
   * arrives after a change must not share a load that began before it). The feed calls this for
   * changes made anywhere; a service calls it after its own writes, so this process sees them
   * before the notification.
   */
  forget(accountId?: number): void {
    this.epoch++;
    if (accountId === undefined) {
      this.entries.clear();
      this.loading.clear();
    } else {
      this.entries.delete(accountId);
      this.loading.delete(accountId);
    }
  }
}
