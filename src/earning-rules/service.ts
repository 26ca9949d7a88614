import { randomBytes } from 'node:crypto';
import type { AccountsService } from '../accounts/service.js';
import type { Clock } from '../clock.js';
import { notFound } from '../errors.js';
import type { Db } from '../storage/db.js';
import { ensureServerSecret } from '../storage/server-secrets.js';
import { validate } from '../validate.js';
import { type Cursor, CursorCodec, type Direction } from './cursor.js';
import { RulesPages } from './page-cache.js';
import {
  deleteRule,
  findPage,
  hasRulesBeyond,
  insertRules,
  listRules,
  type NewRule,
  updateRuleEnabled,
} from './repository.js';
import {
  DEFAULT_LIMIT,
  type EarningRule,
  EarningRuleInput,
  EarningRuleInputList,
  type EarningRulesPage,
  type StoredEarningRule,
} from './schemas.js';

/** The `server_secrets` row holding the cursor HMAC key, shared by every server process. */
export const CURSOR_KEY_SECRET = 'cursor_hmac_key';
/** Bytes of serialised pages one service (one database) keeps: well over a thousand full 50-rule pages. */
const PAGE_CACHE_BYTES = 32 * 1024 * 1024;

/** Earning rules and their keyset pages (spec 4.3). */
export class EarningRulesService {
  // One key load per process (per database); a failed load is retried by the next request.
  private codec: Promise<CursorCodec> | null = null;
  private readonly pages: RulesPages;

  constructor(
    readonly db: Db,
    readonly clock: Clock,
    readonly accounts: AccountsService,
  ) {
    this.pages = new RulesPages(db, PAGE_CACHE_BYTES);
  }

  /**
   * A page as `list` gives it, serialised by `serialize` (the route's response schema), from the
   * page cache while the account's rules have not changed.
   */
  async listSerialised(
    accountId: number,
    query: { limit?: number; cursor?: string },
    serialize: (page: EarningRulesPage) => string,
  ): Promise<string> {
    // "No cursor" and any cursor never share a key (an empty cursor is refused by the schema).
    const key = `${query.limit ?? ''}:${query.cursor === undefined ? '-' : `c${query.cursor}`}`;
    return this.pages.get(accountId, key, async () => serialize(await this.list(accountId, query)));
  }

  /**
   * One page of the account's enabled rules, id descending. Without a cursor: the newest rules.
   * A `next` cursor holds the last id of the page it came from, a `previous` cursor the first id.
   */
  async list(accountId: number, query: { limit?: number; cursor?: string }): Promise<EarningRulesPage> {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const codec = await this.cursorCodec();
    const from = query.cursor === undefined ? null : codec.decode(query.cursor, accountId);
    const direction: Direction = from?.direction ?? 'next';
    const boundary = from?.boundary ?? null;

    // One row more than asked tells whether a further page exists in the direction of travel.
    const fetched = await findPage(this.db.kysely, accountId, direction, boundary, limit + 1);
    const more = fetched.length > limit;
    const rules = fetched.slice(0, limit);
    if (direction === 'previous') rules.reverse();

    const older = await this.olderEdge(accountId, rules, from, more);
    const newer = await this.newerEdge(accountId, rules, from, more);
    const cursor = (edge: Edge, to: Direction) =>
      edge === null ? '' : codec.encode({ accountId, direction: to, boundary: edge });
    return {
      earning_rules: rules,
      metadata: { next_cursor: cursor(older, 'next'), previous_cursor: cursor(newer, 'previous') },
    };
  }

  /**
   * The boundary of the next (older) page, or null when there is none. From a page fetched
   * going `next`, the extra row answers; from a `previous` page, an indexed one-row probe does.
   * An empty `previous` page (every newer rule went away) leads back to the rules at and below
   * its boundary (`id < boundary + 1`), so the rule the client last saw is not skipped.
   */
  private async olderEdge(accountId: number, rules: EarningRule[], from: Cursor | null, more: boolean): Promise<Edge> {
    const last = rules.at(-1);
    if (from?.direction !== 'previous') return more && last ? last.id : null;
    const edge = last ? last.id : from.boundary + 1;
    return (await hasRulesBeyond(this.db.kysely, accountId, 'next', edge)) ? edge : null;
  }

  /**
   * The boundary of the previous (newer) page, or null when there are no newer enabled rules.
   * The first page (no cursor) has none; a `previous` page knows from its extra row; a `next`
   * page probes. An empty `next` page leads back to the rules at and above its boundary.
   */
  private async newerEdge(accountId: number, rules: EarningRule[], from: Cursor | null, more: boolean): Promise<Edge> {
    const first = rules[0];
    if (from === null) return null;
    if (from.direction === 'previous') return more && first ? first.id : null;
    const edge = first ? first.id : from.boundary - 1;
    return (await hasRulesBeyond(this.db.kysely, accountId, 'previous', edge)) ? edge : null;
  }

  /**
   * Creates one rule (an object) or many (an array) for the account, all or nothing: every rule
   * is validated before any is written, and the rows go in within one transaction. Returns the
   * created rule, or the created rules in input order (ids ascending).
   */
  async create(accountId: number, input: unknown): Promise<StoredEarningRule | StoredEarningRule[]> {
    const many = Array.isArray(input);
    const rules = many
      ? validate(EarningRuleInputList, input, 'earning_rules')
      : [validate(EarningRuleInput, input, 'earning_rule')];
    await this.accounts.require(accountId);
    const now = this.clock.now();
    const created = await this.db.kysely
      .transaction()
      .execute((trx) => insertRules(trx, accountId, rules.map(withDefaults), now));
    this.pages.changed(accountId);
    return many ? created : created[0]!;
  }

  /** Every rule of the account, newest first; disabled ones too with `includeDisabled`. */
  async listAll(accountId: number, includeDisabled: boolean): Promise<StoredEarningRule[]> {
    await this.accounts.require(accountId);
    return listRules(this.db.kysely, accountId, includeDisabled);
  }

  /** Lists (`true`) or hides (`false`) a rule; `404 not_found` for an unknown id. */
  async setEnabled(id: number, enabled: boolean): Promise<StoredEarningRule> {
    const now = this.clock.now();
    const rule = await this.db.kysely.transaction().execute((trx) => updateRuleEnabled(trx, id, enabled, now));
    this.pages.changed();
    if (!rule) throw notFound(`earning rule ${id} does not exist`);
    return rule;
  }

  /** Deletes a rule; `404 not_found` for an unknown id. */
  async delete(id: number): Promise<{ deleted: true }> {
    const deleted = await this.db.kysely.transaction().execute((trx) => deleteRule(trx, id));
    this.pages.changed();
    if (!deleted) throw notFound(`earning rule ${id} does not exist`);
    return { deleted: true };
  }

  private cursorCodec(): Promise<CursorCodec> {
    this.codec ??= this.loadCursorCodec().catch((error: unknown) => {
      this.codec = null;
      throw error;
    });
    return this.codec;
  }

  private async loadCursorCodec(): Promise<CursorCodec> {
    const candidate = randomBytes(32).toString('base64');
    const key = await ensureServerSecret(this.db.kysely, CURSOR_KEY_SECRET, candidate, this.clock.now());
    return new CursorCodec(Buffer.from(key, 'base64'));
  }
}

/** A page boundary id, or null when there is no such page. */
type Edge = number | null;

function withDefaults(rule: EarningRuleInput): NewRule {
  return {
    enabled: rule.enabled ?? true,
    name: rule.name,
    image_url: rule.image_url,
    action_text: rule.action_text ?? null,
    action_url: rule.action_url ?? null,
    restricted_to_vip_tier_ids: rule.restricted_to_vip_tier_ids ?? [],
    reward: rule.reward,
    reward_value: rule.reward_value,
    earning_limit: rule.earning_limit ?? null,
  };
}
