import type { AccountsService } from '../accounts/service.js';
import { findActivityTypeByToken } from '../activity-types/repository.js';
import type { ActivityType } from '../activity-types/schemas.js';
import type { Clock } from '../clock.js';
import { invalidParameter, notFound } from '../errors.js';
import { ALL_EARNING_RULES_CURSOR, EARNING_RULES_CURSOR } from '../pagination/cursor.js';
import { Cursors, keysetPage } from '../pagination/keyset.js';
import { DEFAULT_LIMIT } from '../pagination/schemas.js';
import type { Db } from '../storage/db.js';
import { validate } from '../validate.js';
import { RulesPages } from './page-cache.js';
import {
  deleteRule,
  findPage,
  findStoredPage,
  findStoredRule,
  insertRules,
  listRules,
  type NewRule,
  updateRule,
  updateRuleEnabled,
} from './repository.js';
import { EarningRuleInput, EarningRuleInputList, type EarningRulesPage, type StoredEarningRule } from './schemas.js';

/** Bytes of serialised pages one service (one database) keeps: well over a thousand full 50-rule pages. */
const PAGE_CACHE_BYTES = 32 * 1024 * 1024;

/** Earning rules and their keyset pages (spec 4.3). */
export class EarningRulesService {
  private readonly cursors: Cursors;
  private readonly pages: RulesPages;

  constructor(
    readonly db: Db,
    readonly clock: Clock,
    readonly accounts: AccountsService,
  ) {
    this.pages = new RulesPages(db, PAGE_CACHE_BYTES);
    this.cursors = new Cursors(db.kysely, clock);
  }

  /**
   * A page as `list` gives it, serialised by `serialize` (the route's response schema), from the
   * page cache while the account's rules have not changed.
   */
  async listSerialised(
    accountId: number,
    query: { limit?: number; cursor?: string },
    serialize: (page: EarningRulesPage) => string,
  ): Promise<Buffer> {
    // "No cursor" and any cursor never share a key (an empty cursor is refused by the schema).
    const key = `${query.limit ?? ''}:${query.cursor === undefined ? '-' : `c${query.cursor}`}`;
    return this.pages.get(accountId, key, async () => serialize(await this.list(accountId, query)));
  }

  /** One page of the account's enabled rules, id descending (see keysetPage). */
  async list(accountId: number, query: { limit?: number; cursor?: string }): Promise<EarningRulesPage> {
    const page = await keysetPage({
      codec: await this.cursors.codec(EARNING_RULES_CURSOR),
      accountId,
      limit: query.limit ?? DEFAULT_LIMIT,
      cursor: query.cursor,
      fetch: (direction, boundary, rows) => findPage(this.db.kysely, accountId, direction, boundary, rows),
    });
    return { earning_rules: page.items, metadata: page.metadata };
  }

  /**
   * Creates one rule (an object) or many (an array) for the account, all or nothing: every rule
   * is validated before any is written, and the rows go in within one transaction. Returns the
   * created rule, or the created rules in input order (ids ascending).
   */
  async create(accountId: number, input: unknown): Promise<StoredEarningRule | StoredEarningRule[]> {
    const many = Array.isArray(input);
    const root = many ? 'earning_rules' : 'earning_rule';
    const rules = many ? validate(EarningRuleInputList, input, root) : [validate(EarningRuleInput, input, root)];
    await this.accounts.require(accountId);
    const types = await this.activityTypesOf(accountId, rules, root);
    const now = this.clock.now();
    const created = await this.db.kysely.transaction().execute((trx) =>
      insertRules(
        trx,
        accountId,
        rules.map((rule) => withDefaults(rule, types)),
        now,
      ),
    );
    this.pages.changed(accountId);
    return many ? created : created[0]!;
  }

  /**
   * Replaces every field of the account's rule `id` with `input` (a whole rule, as `create` takes
   * it: `enabled` absent means enabled, as at creation); `404 not_found` when the account has no
   * such rule.
   */
  async update(accountId: number, id: number, input: unknown): Promise<StoredEarningRule> {
    const rule = validate(EarningRuleInput, input, 'earning_rule');
    const types = await this.activityTypesOf(accountId, [rule], 'earning_rule');
    const now = this.clock.now();
    const updated = await this.db.kysely
      .transaction()
      .execute((trx) => updateRule(trx, accountId, id, withDefaults(rule, types), now));
    this.pages.changed(accountId);
    if (!updated) throw notFound(`earning rule ${id} does not exist`);
    return updated;
  }

  /** The account's activity types the rules name, by token; `400` naming a token the account does not have. */
  private async activityTypesOf(accountId: number, rules: EarningRuleInput[], root: string) {
    const types = new Map<string, ActivityType>();
    for (const [index, rule] of rules.entries()) {
      const token = rule.activity_token;
      if (token === undefined || token === null || types.has(token)) continue;
      const type = await findActivityTypeByToken(this.db.kysely, accountId, token);
      const field = root === 'earning_rules' ? `${root}.${index}.activity_token` : `${root}.activity_token`;
      if (!type) throw invalidParameter(field, `names no activity type of account ${accountId}`);
      types.set(token, type);
    }
    return types;
  }

  /** One page of all the account's rules, disabled ones too, id descending (the console's list). */
  async pageAll(accountId: number, query: { limit?: number; cursor?: string }) {
    return keysetPage({
      codec: await this.cursors.codec(ALL_EARNING_RULES_CURSOR),
      accountId,
      limit: query.limit ?? DEFAULT_LIMIT,
      cursor: query.cursor,
      fetch: (direction, boundary, rows) => findStoredPage(this.db.kysely, accountId, direction, boundary, rows),
    });
  }

  /** The account's rule `id` as the CLI shows it; `404 not_found` when the account has none. */
  async getStored(accountId: number, id: number): Promise<StoredEarningRule> {
    const rule = await findStoredRule(this.db.kysely, id, accountId);
    if (!rule) throw notFound(`earning rule ${id} does not exist`);
    return rule;
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
}

function withDefaults(rule: EarningRuleInput, types: Map<string, ActivityType>): NewRule {
  const type = rule.activity_token ? types.get(rule.activity_token) : undefined;
  return {
    activityType: type ? { id: type.id, token: type.token } : null,
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
