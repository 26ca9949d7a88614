import type { Generated, GeneratedAlways, Insertable, Selectable } from 'kysely';

/**
 * The tables, as Kysely sees them. Times are milliseconds since the epoch; JSON values are text;
 * booleans are 0/1 integers so that both engines store them alike.
 */
export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  apps: AppsTable;
  access_tokens: AccessTokensTable;
  customers: CustomersTable;
  customer_identities: CustomerIdentitiesTable;
  referral_settings: ReferralSettingsTable;
  earning_rules: EarningRulesTable;
  server_secrets: ServerSecretsTable;
  server_settings: ServerSettingsTable;
  users: UsersTable;
  oauth_sessions: OAuthSessionsTable;
  oauth_sign_in_failures: OAuthSignInFailuresTable;
  oauth_grants: OAuthGrantsTable;
  oauth_codes: OAuthCodesTable;
  oauth_refresh_tokens: OAuthRefreshTokensTable;
  vip_tiers: VipTiersTable;
  activity_types: ActivityTypesTable;
  activities: ActivitiesTable;
  points_transactions: PointsTransactionsTable;
  points_settings: PointsSettingsTable;
  idempotency_keys: IdempotencyKeysTable;
  rewards: RewardsTable;
  points_products: PointsProductsTable;
  points_purchases: PointsPurchasesTable;
  reward_fulfillments: RewardFulfillmentsTable;
  events: EventsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_attempts: WebhookAttemptsTable;
  jobs: JobsTable;
  vip_tier_changes: VipTierChangesTable;
  vip_earnings: VipEarningsTable;
  imports: ImportsTable;
  import_uploads: ImportUploadsTable;
  import_upload_chunks: ImportUploadChunksTable;
  import_emails: ImportEmailsTable;
  import_refusals: ImportRefusalsTable;
  opening_balances: OpeningBalancesTable;
  referrals: ReferralsTable;
  referral_clicks: ReferralClicksTable;
}

export interface AccountsTable {
  id: Generated<number>;
  name: string;
  created_at: number;
  /** Raised with every change to the account's earning rules (page cache validation). */
  earning_rules_version: Generated<number>;
  /** The VIP program's type (engine-contract.md, "VIP periods"). */
  vip_program: Generated<VipProgramType>;
  /** Raised with every change of the type or of the tiers' milestones: customers placed for an older one are placed again. */
  vip_program_version: Generated<number>;
  /** The vip_program_version the account's last complete placement of its customers was made for. */
  vip_placed_version: Generated<number>;
}

export type VipProgramType = 'all_time' | 'calendar_year' | 'rolling_12_months';

export interface ApiKeysTable {
  id: Generated<number>;
  account_id: number;
  /** SHA-256 of the whole key, hex. The key itself is never stored. */
  key_hash: string;
  /** The first characters of the key, for listings (`api_AbC4…`). */
  key_prefix: string;
  /** Space-separated scope names. */
  scopes: string;
  created_at: number;
  revoked_at: number | null;
  /** What the merchant calls the key. */
  name: Generated<string>;
  /** When the key was last used, written at most once an hour (LAST_USED_INTERVAL_MS). */
  last_used_at: Generated<number | null>;
  /** The raw key of a key just made in the console, sealed to its session, until shown once. */
  sealed_key: Generated<string | null>;
}

export interface AppsTable {
  id: Generated<number>;
  name: string;
  client_id: string;
  /** SHA-256 of the client secret, hex; null for a public client (PKCE only). */
  client_secret_hash: string | null;
  scopes: string;
  /** JSON array of exact redirect URIs. */
  redirect_uris: string;
  created_at: number;
}

export interface AccessTokensTable {
  id: Generated<number>;
  account_id: number;
  app_id: number;
  token_hash: string;
  token_prefix: string;
  scopes: string;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
  /** The OAuth grant the token descends from; null for tokens issued through the CLI. */
  grant_id: number | null;
}

export interface CustomersTable {
  id: Generated<number>;
  account_id: number;
  email: string;
  /** Trimmed, lower-cased email: the key customers are matched on. */
  email_normalized: string;
  first_name: string | null;
  last_name: string | null;
  created_at: number;
  updated_at: number;
  state: Generated<CustomerState>;
  /** The sum of the customer's points transactions, kept by a trigger (never written by the app). */
  points_balance: Generated<number>;
  /** The sum of the positive points transactions: VIP progress, kept by the same trigger. */
  points_earned: Generated<number>;
  vip_tier_id: number | null;
  /** `YYYY-MM-DD`, null until something sets it. */
  date_of_birth: string | null;
  /** The customer's referral code (docs/referrals.md), made when they first become a member. */
  referral_code: string | null;
  /** When their last points transaction or activity was recorded (ms), kept by triggers; null: never. */
  last_active_at: Generated<number | null>;
  /** The points_expire_at (ms) their last points-expiry reminder told of: one reminder per date. */
  expiry_reminded_for: Generated<number | null>;
  /** A period program's progress: points earned in the period (all-time programs read points_earned). */
  vip_progress: Generated<number>;
  /** When the tier a period program gave expires (ms); null: no tier, or an all-time program. */
  vip_tier_expires_at: Generated<number | null>;
  /** The last instant of the current calendar-year period (ms); null otherwise. */
  vip_period_end: Generated<number | null>;
  /** Points still to earn before the tier expires to keep it past then; null: nothing needed. */
  vip_retain_delta: Generated<number | null>;
  /** When time alone changes the placement (a year ends, points leave the window); null: never. */
  vip_recheck_at: Generated<number | null>;
  /** The account's vip_program_version this placement was made for. */
  vip_program_version: Generated<number>;
  /** Points earned elsewhere beyond the balance an import brought (points_earned includes them). */
  earned_before_import: Generated<number>;
  /** updated_at's minute, made by the database: what the `updated_at_min` index holds (see since.ts). */
  updated_minute: GeneratedAlways<number>;
}

export type CustomerState = 'candidate' | 'member' | 'disabled';

export interface CustomerIdentitiesTable {
  id: Generated<number>;
  account_id: number;
  customer_id: number;
  distinct_id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  /** JSON object. */
  properties: string;
  created_at: number;
  updated_at: number;
}

export interface ReferralSettingsTable {
  account_id: number;
  status: 'active' | 'inactive';
  sender_reward_name: string;
  sender_reward_image_url: string;
  sender_reward_image_content_type: string | null;
  receiver_reward_name: string;
  receiver_reward_image_url: string;
  receiver_reward_image_content_type: string | null;
  updated_at: number;
  sender_reward_fulfillment: Generated<RewardFulfillmentKind>;
  sender_reward_points: number | null;
  receiver_reward_fulfillment: Generated<RewardFulfillmentKind>;
  receiver_reward_points: number | null;
  qualifying_activity_token: string | null;
  /** A decimal, as text. */
  minimum_amount: Generated<string>;
  window_days: Generated<number>;
  landing_url: string | null;
  sender_limit_per_30_days: Generated<number>;
}

/** How a referral reward is given: a reward fulfillment with a code, or points. */
export type RewardFulfillmentKind = 'code' | 'points';

export interface ReferralsTable {
  id: Generated<number>;
  account_id: number;
  sender_customer_id: number;
  receiver_customer_id: number;
  receiver_email: string;
  receiver_email_normalized: string;
  /**
   * The receiver's mailbox (src/referrals/email.ts), unique per account: one referral per mailbox.
   * Null only on a referral made before the rule whose mailbox an earlier referral already held.
   */
  receiver_mailbox: string | null;
  referral_code: string | null;
  /** `expired` is never stored: a pending referral past expires_at shows expired. */
  status: 'pending' | 'completed';
  expires_at: number;
  completed_at: number | null;
  receiver_reward_fulfillment_id: number | null;
  receiver_points_transaction_id: number | null;
  sender_reward_fulfillment_id: number | null;
  sender_points_transaction_id: number | null;
  /** Why a completed referral gave the sender nothing (`sender_not_member`), else null. */
  sender_reward_skipped: string | null;
  created_at: number;
  updated_at: number;
}
export type ReferralRow = Selectable<ReferralsTable>;

export interface ReferralClicksTable {
  account_id: number;
  customer_id: number;
  /** Days since the epoch (UTC). */
  day: number;
  clicks: number;
}

export interface EarningRulesTable {
  id: Generated<number>;
  account_id: number;
  /** 1 when listed by GET /v1/earning_rules. */
  enabled: number;
  name: string;
  image_url: string;
  action_text: string | null;
  action_url: string | null;
  /** JSON array of integers; `[]` means every tier. */
  restricted_to_vip_tier_ids: string;
  reward_type: string;
  reward_value_type: 'variable' | 'fixed';
  reward_value: number;
  /** Only for `variable`: `reward_value` is earned per this amount. */
  reward_per_amount: number | null;
  earning_limit_type: 'rolling' | 'lifetime' | null;
  earning_limit_max: number | null;
  earning_limit_unit: 'day' | 'week' | 'month' | 'year' | null;
  earning_limit_unit_count: number | null;
  created_at: number;
  updated_at: number;
  /** The activity type whose activities the rule evaluates; null: it never credits. */
  activity_type_id: number | null;
}

export interface ServerSettingsTable {
  /** `public_url`: the address clients reach the last server started on this database at. */
  name: string;
  value: string;
  updated_at: number;
}

export interface ServerSecretsTable {
  name: string;
  /** Base64 random bytes shared by every server process (for example the cursor HMAC key). */
  value: string;
  created_at: number;
}

export interface UsersTable {
  id: Generated<number>;
  account_id: number;
  email: string;
  /** Trimmed, lower-cased email: unique across users. */
  email_normalized: string;
  /** `scrypt$log2N$r$p$salt$key` (base64): the parameters travel with the hash. */
  password_hash: string;
  created_at: number;
}

export interface OAuthSessionsTable {
  id: Generated<number>;
  /** SHA-256 of the session id in the cookie, hex. */
  session_hash: string;
  /** Null until the merchant signs in. */
  user_id: number | null;
  created_at: number;
  expires_at: number;
  /** When the session was last used, refreshed at most once a minute (nullable only because it was added later). */
  last_seen_at: number | null;
}

export interface OAuthSignInFailuresTable {
  /** `pair:<sha256 of address and email>` or `ip:<address, an IPv6 one as its /64>`. */
  key: string;
  /** Sign-in attempts of the current run, each counted before its password was checked. */
  failures: number;
  /** When the current run began. */
  window_started_at: number;
  /** No attempt of this key is checked before this time (the sign-in throttle's delay). */
  retry_at: Generated<number>;
}

export interface OAuthGrantsTable {
  id: Generated<number>;
  account_id: number;
  app_id: number;
  user_id: number;
  /** The scopes the merchant approved, space-separated. */
  scopes: string;
  created_at: number;
  revoked_at: number | null;
}

export interface OAuthCodesTable {
  id: Generated<number>;
  /** SHA-256 of the authorization code, hex. */
  code_hash: string;
  grant_id: number;
  redirect_uri: string;
  code_challenge: string | null;
  code_challenge_method: string | null;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

export interface OAuthRefreshTokensTable {
  id: Generated<number>;
  /** SHA-256 of the refresh token, hex. */
  token_hash: string;
  grant_id: number;
  /** The access token issued together with this refresh token. */
  access_token_id: number | null;
  scopes: string;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
}

export interface VipTiersTable {
  id: Generated<number>;
  account_id: number;
  name: string;
  /** `""` when the tier has no image. */
  image_url: string;
  /** Points earned (all time) from which a customer is in the tier. */
  milestone: number;
  /** JSON array of `{"name"}`. */
  perks: string;
  created_at: number;
  updated_at: number;
}

/** A run of `loyalty import customers` (or of the console's upload), with its progress. */
export interface ImportsTable {
  id: Generated<number>;
  account_id: number;
  file_name: string;
  status: 'running' | 'finished' | 'failed';
  bytes_total: number;
  bytes_read: Generated<number>;
  rows: Generated<number>;
  created: Generated<number>;
  updated: Generated<number>;
  unchanged: Generated<number>;
  refused: Generated<number>;
  /** Why a failed run stopped. */
  error: string | null;
  started_at: number;
  updated_at: number;
  finished_at: number | null;
  /** The console's upload it reads (null for the CLI's runs). */
  upload_id: number | null;
  /** The file's line on which the last applied row ended (with `bytes_read`, where reading goes on). */
  lines_read: Generated<number>;
  /** JSON array: the header's columns as mapped, for reading on from `bytes_read`; null for the CLI's runs. */
  columns: string | null;
  /** The SHA-256 (hex) of the file it reads (null for runs before issue 49). */
  file_sha256: string | null;
  /** 1 when it sets balances to the file's (one adjustment of the difference) instead of refusing them. */
  set_balances: Generated<number>;
}

/** A file uploaded in the console, kept until its import has read it. */
export interface ImportUploadsTable {
  id: Generated<number>;
  account_id: number;
  file_name: string;
  bytes_total: number;
  delimiter: ',' | ';';
  /** JSON array: the header's column names as the file has them. */
  header: string;
  created_at: number;
  /** The SHA-256 (hex) of its bytes, once they are in. */
  sha256: Generated<string | null>;
}

/** A piece of an uploaded file, in order of `seq`. */
export interface ImportUploadChunksTable {
  upload_id: number;
  seq: number;
  data: Uint8Array;
}

/** The emails a run has seen, with their line: a later row with one of them is a duplicate. */
export interface ImportEmailsTable {
  import_id: number;
  email_normalized: string;
  line: number;
}

export interface ImportRefusalsTable {
  import_id: number;
  line: number;
  message: string;
}

/** A customer's opening balance, imported once per customer (issue 49), and what brought it. */
export interface OpeningBalancesTable {
  customer_id: number;
  account_id: number;
  /** The run that wrote it last; null for balances imported before runs were kept with them. */
  import_id: number | null;
  file_name: string;
  /** The SHA-256 (hex) of that file: the same bytes run again know their own balances. */
  file_sha256: string | null;
  /** The file's line that brought it (null before issue 49). */
  line: number | null;
  points_balance: number;
  points_earned: number;
  created_at: number;
  updated_at: number;
}

/** Points a customer earned on one UTC day (kept by the ledger's trigger). */
export interface VipEarningsTable {
  customer_id: number;
  /** Days since 1970-01-01, UTC. */
  day: number;
  points: number;
}

export interface VipTierChangesTable {
  id: Generated<number>;
  account_id: number;
  customer_id: number;
  /** No foreign key: a deleted tier's moves are kept. */
  previous_vip_tier_id: number | null;
  current_vip_tier_id: number | null;
  created_at: number;
}

export interface ActivityTypesTable {
  id: Generated<number>;
  account_id: number;
  name: string;
  /** `activity_` and random base62; what integrators send. Not a secret. */
  token: string;
  created_at: number;
}

export interface ActivitiesTable {
  id: Generated<number>;
  account_id: number;
  customer_id: number;
  activity_type_id: number;
  distinct_id: string | null;
  /** JSON object. */
  properties: string;
  created_on_origin_at: number | null;
  /** The activity's time `t`: created_on_origin_at, or when it was received. */
  occurred_at: number;
  created_at: number;
  updated_at: number;
}

export interface PointsTransactionsTable {
  id: Generated<number>;
  account_id: number;
  customer_id: number;
  points_change: number;
  description: string;
  internal_note: string | null;
  activity_id: number | null;
  earning_rule_id: number | null;
  /** The purchase that spent these points, or null. */
  points_purchase_id: Generated<number | null>;
  /** The time earning limits measure: the activity's time for a credit, else created_at. */
  occurred_at: number;
  created_at: number;
  updated_at: number;
  /** The console user who posted a manual adjustment; null for the API's and the engine's entries. */
  created_by_user_id: Generated<number | null>;
  /** 0 for an entry that does not count towards points earned (a cancelled reward's refund); else 1. */
  counts_as_earned: Generated<number>;
}

export interface PointsSettingsTable {
  account_id: number;
  label_one: string;
  label_other: string;
  /** Days without a points transaction or activity after which a balance expires; null: never. */
  expiry_inactivity_days: Generated<number | null>;
  updated_at: number;
}

export interface IdempotencyKeysTable {
  account_id: number;
  key: string;
  /** SHA-256 (hex) of the route and the canonical body. */
  request_hash: string;
  /** The first answer, once its transaction committed. */
  status: number | null;
  body: string | null;
  created_at: number;
}

export interface RewardsTable {
  id: Generated<number>;
  account_id: number;
  name: string;
  description: string;
  image_url: string;
  created_at: number;
  updated_at: number;
}

export interface PointsProductsTable {
  id: Generated<number>;
  account_id: number;
  reward_id: number;
  /** 1 when listed and purchasable. */
  enabled: number;
  exchange_type: 'fixed' | 'variable';
  points_price: number | null;
  variable_points_step: number | null;
  variable_points_step_reward_value: number | null;
  variable_points_min: number | null;
  variable_points_max: number | null;
  /** Days its codes can be used after they are issued; null: forever. */
  expires_after_days: Generated<number | null>;
  created_at: number;
  updated_at: number;
}

export interface PointsPurchasesTable {
  id: Generated<number>;
  account_id: number;
  customer_id: number;
  points_product_id: number;
  points_spent: number;
  created_at: number;
  updated_at: number;
}

export interface RewardFulfillmentsTable {
  id: Generated<number>;
  account_id: number;
  customer_id: number;
  /** The purchase that paid for it; null for a referral's reward. */
  points_purchase_id: number | null;
  name: string;
  /** Unique in the account, random (see reward-fulfillments/code.ts). */
  code: string;
  image_url: string;
  fulfillment_status: 'pending' | 'issued' | 'cancelled' | 'failed';
  /** Stored as used or unused; `expired` is read from expires_at, never stored. */
  usage_status: 'used' | 'unused' | 'untracked';
  /** When it was used (ms); null while unused. */
  used_at: Generated<number | null>;
  /** When it stops being usable (ms); null: never. */
  expires_at: Generated<number | null>;
  created_at: number;
  updated_at: number;
}

export interface EventsTable {
  id: Generated<number>;
  /** `evt_` and random base62: the id integrators see. */
  public_id: string;
  account_id: number;
  type: string;
  /** The event's `data`, JSON text. */
  data: string;
  created_at: number;
}

export interface WebhookEndpointsTable {
  id: Generated<number>;
  account_id: number;
  /** The app grant that made it; null when made with an API key, the console, the CLI or a CLI-issued token. */
  grant_id: number | null;
  /** The app whose access token made it (with a grant or without); null: the merchant's. */
  app_id: number | null;
  url: string;
  description: Generated<string>;
  /** JSON array as given: types, or `["*"]`. */
  enabled_events: string;
  /** What the fan-out matches: `*`, or ` type type … ` (a space around each type). */
  event_types: string;
  /**
   * The scopes of the credential that made it (narrowed by any that re-pointed it), space-separated:
   * it is sent only the event types they can read. Null: not narrowed (the console, the CLI).
   */
  scopes: string | null;
  status: 'enabled' | 'disabled';
  /** The signing secret, sealed (see webhooks/secrets.ts). */
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
  /** When its attempts began failing with no success since; null when the last one succeeded. */
  failing_since: number | null;
  created_at: number;
  updated_at: number;
}

export interface WebhookAttemptsTable {
  id: Generated<number>;
  account_id: number;
  webhook_endpoint_id: number;
  event_id: number;
  attempt: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  response_body: string;
  created_at: number;
  /** The id of its delivery's job (one delivery: one job); null for attempts logged before it was kept. */
  delivery_id: number | null;
  /** 1 when no retry followed it: it succeeded, or the retry schedule ran out. */
  ends_delivery: Generated<number>;
  /** `resend`: an attempt of a delivery made by a resend; `event`: of the event's own delivery. */
  trigger: Generated<'event' | 'resend'>;
}

export interface JobsTable {
  id: Generated<number>;
  queue: string;
  account_id: number | null;
  group_key: string | null;
  subject_id: number | null;
  /** JSON object. */
  payload: Generated<string>;
  unique_key: string | null;
  /** Due at or after this time; while claimed, the end of the claim's lease. */
  run_at: number;
  /** Claims so far (the attempt under way is this number). */
  attempts: Generated<number>;
  /** Who holds the claim; null when unclaimed. */
  lease_owner: string | null;
  created_at: number;
  /** A recurring job's last run: when it ended (ms), how long it took, 1 when it failed; null before the first. */
  last_run_at: Generated<number | null>;
  last_duration_ms: Generated<number | null>;
  last_failed: Generated<number | null>;
}

export type EventRow = Selectable<EventsTable>;
export type WebhookEndpointRow = Selectable<WebhookEndpointsTable>;
export type WebhookAttemptRow = Selectable<WebhookAttemptsTable>;
export type JobRow = Selectable<JobsTable>;
export type AccountRow = Selectable<AccountsTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;
export type AppRow = Selectable<AppsTable>;
export type AccessTokenRow = Selectable<AccessTokensTable>;
export type CustomerRow = Selectable<CustomersTable>;
export type CustomerIdentityRow = Selectable<CustomerIdentitiesTable>;
export type ReferralSettingsRow = Selectable<ReferralSettingsTable>;
export type EarningRuleRow = Selectable<EarningRulesTable>;
export type NewEarningRule = Insertable<EarningRulesTable>;
export type UserRow = Selectable<UsersTable>;
export type OAuthSessionRow = Selectable<OAuthSessionsTable>;
export type OAuthGrantRow = Selectable<OAuthGrantsTable>;
export type OAuthCodeRow = Selectable<OAuthCodesTable>;
export type OAuthRefreshTokenRow = Selectable<OAuthRefreshTokensTable>;
export type VipTierRow = Selectable<VipTiersTable>;
export type ActivityTypeRow = Selectable<ActivityTypesTable>;
export type ActivityRow = Selectable<ActivitiesTable>;
export type PointsTransactionRow = Selectable<PointsTransactionsTable>;
/** Every column of a new points transaction (null where it has no value). */
export type NewPointsTransaction = Omit<PointsTransactionRow, 'id'>;
export type RewardRow = Selectable<RewardsTable>;
export type PointsProductRow = Selectable<PointsProductsTable>;
export type PointsPurchaseRow = Selectable<PointsPurchasesTable>;
export type RewardFulfillmentRow = Selectable<RewardFulfillmentsTable>;
