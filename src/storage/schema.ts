import type { Generated, Insertable, Selectable, Updateable } from 'kysely';

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
  users: UsersTable;
  oauth_sessions: OAuthSessionsTable;
  oauth_sign_in_failures: OAuthSignInFailuresTable;
  oauth_grants: OAuthGrantsTable;
  oauth_codes: OAuthCodesTable;
  oauth_refresh_tokens: OAuthRefreshTokensTable;
}

export interface AccountsTable {
  id: Generated<number>;
  name: string;
  created_at: number;
  /** Raised with every change to the account's earning rules (page cache validation). */
  earning_rules_version: Generated<number>;
}

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
}

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
}

export interface OAuthSignInFailuresTable {
  /** `email:<sha256>` or `ip:<address>`. */
  key: string;
  failures: number;
  window_started_at: number;
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

export type AccountRow = Selectable<AccountsTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;
export type AppRow = Selectable<AppsTable>;
export type AccessTokenRow = Selectable<AccessTokensTable>;
export type CustomerRow = Selectable<CustomersTable>;
export type CustomerIdentityRow = Selectable<CustomerIdentitiesTable>;
export type NewCustomerIdentity = Insertable<CustomerIdentitiesTable>;
export type CustomerIdentityUpdate = Updateable<CustomerIdentitiesTable>;
export type ReferralSettingsRow = Selectable<ReferralSettingsTable>;
export type EarningRuleRow = Selectable<EarningRulesTable>;
export type NewEarningRule = Insertable<EarningRulesTable>;
export type UserRow = Selectable<UsersTable>;
export type OAuthSessionRow = Selectable<OAuthSessionsTable>;
export type OAuthGrantRow = Selectable<OAuthGrantsTable>;
export type OAuthCodeRow = Selectable<OAuthCodesTable>;
export type OAuthRefreshTokenRow = Selectable<OAuthRefreshTokensTable>;
