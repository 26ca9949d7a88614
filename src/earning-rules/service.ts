import type { AccountsService } from '../accounts/service.js';
import type { ActivityType } from '../activity-types/schemas.js';
import type { ActivityTypesService } from '../activity-types/service.js';
import type { Clock } from '../clock.js';
import { invalidParameter, notFound } from '../errors.js';
import { ALL_EARNING_RULES_CURSOR, EARNING_RULES_CURSOR } from '../pagination/cursor.js';
import { Cursors, keysetPage } from '../pagination/keyset.js';
import { DEFAULT_LIMIT } from '../pagination/schemas.js';
import { AccountCache, CACHE_MAX_AGE_MS } from '../storage/change-feed.js';
import type { Db } from '../storage/db.js';
import type { UnitOfWork, Work } from '../storage/unit-of-work.js';
import { validate } from '../validate.js';
import {
  deleteRule,
  findBoundRules,
  findPage,
  findRulesVersion,
  findStoredPage,
  findStoredRule,
  insertRules,
  listRules,
  type NewRule,
  updateRule,
  updateRuleEnabled,
} from './repository.js';
import {
  type EarningRule,
  EarningRuleInput,
  EarningRuleInputList,
  type EarningRulesPage,
  type StoredEarningRule,
} from './schemas.js';

/** Earning rules and their keyset pages (spec 4.3). */
export class EarningRulesService {
  private readonly cursors: Cursors;
  /**
   * The accounts' rules versions: on PostgreSQL kept until a change notification, on SQLite until
   * another connection commits (PRAGMA data_version), at most CACHE_MAX_AGE_MS either way.
   */
  private readonly versions: AccountCache<number>;

  constructor(
    private readonly db: Db,
    private readonly uow: UnitOfWork,
    private readonly accounts: AccountsService,
    private readonly activityTypes: ActivityTypesService,
    clock: Clock,
  ) {
    this.versions = new AccountCache(db.changes, 'earning_rules', CACHE_MAX_AGE_MS);
    this.cursors = new Cursors(db.kysely, clock);
  }

  /**
   * The account's earning-rules version (-1 for an account that does not exist): raised in the
   * transaction of every change to its rules, by any process or by the CLI, so a page built at
   * a version is exact while the version stands (the route's page cache, http/page-cache.ts).
   */
  async version(accountId: number): Promise<number> {
    return this.versions.get(accountId, async () => (await findRulesVersion(this.db.kysely, accountId)) ?? -1);
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

  /** The account's enabled rules bound to the activity type, id ascending, read inside `w` (an activity's). */
  boundRules(w: Work, accountId: number, activityTypeId: number): Promise<EarningRule[]> {
    return findBoundRules(w.trx, accountId, activityTypeId);
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
    const created = await this.uow.run(({ trx, now }) =>
      insertRules(
        trx,
        accountId,
        rules.map((rule) => withDefaults(rule, types)),
        now,
      ),
    );
    this.versions.forget(accountId);
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
    const updated = await this.uow.run(({ trx, now }) =>
      updateRule(trx, accountId, id, withDefaults(rule, types), now),
    );
    this.versions.forget(accountId);
    if (!updated) throw notFound(`earning rule ${id} does not exist`);
    return updated;
  }

  /** The account's activity types the rules name, by token; `400` naming a token the account does not have. */
  private async activityTypesOf(accountId: number, rules: EarningRuleInput[], root: string) {
    const types = new Map<string, ActivityType>();
    for (const [index, rule] of rules.entries()) {
      const token = rule.activity_token;
      if (token === undefined || token === null || types.has(token)) continue;
      const type = await this.activityTypes.byToken(accountId, token);
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
    const rule = await this.uow.run(({ trx, now }) => updateRuleEnabled(trx, id, enabled, now));
    // The rule's account is not known here: every account's version is read again.
    this.versions.forget();
    if (!rule) throw notFound(`earning rule ${id} does not exist`);
    return rule;
  }

  /** Deletes a rule; `404 not_found` for an unknown id. */
  async delete(id: number): Promise<{ deleted: true }> {
    const deleted = await this.uow.run(({ trx }) => deleteRule(trx, id));
    this.versions.forget();
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
