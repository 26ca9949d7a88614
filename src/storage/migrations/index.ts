import type { Migration } from 'kysely';
import * as initial from './2026-11-22T0000-initial.js';
import * as oauth from './2026-11-22T0200-oauth.js';
import * as earningRulesVersion from './2026-11-22T0300-earning-rules-version.js';
import * as changeNotifications from './2026-11-22T0400-change-notifications.js';
import * as identitiesFillfactor from './2026-11-22T0500-identities-fillfactor.js';
import * as accessTokenGrant from './2026-11-22T0600-access-token-grant.js';
import * as accessTokenGrantBackfill from './2026-11-23T0100-access-token-grant-backfill.js';
import * as pointsEngine from './2026-11-24T0000-points-engine.js';
import * as pointsProducts from './2026-11-24T0100-points-products.js';
import * as sessionIdle from './2026-11-24T0200-session-idle.js';
import * as activityTypeNames from './2026-11-25T0000-activity-type-names.js';
import * as consoleKeysAndStaff from './2026-11-25T0100-console-keys-and-staff.js';
import * as signInDelays from './2026-11-25T1200-sign-in-delays.js';
import * as eventsWebhooksJobs from './2026-11-25T2000-events-webhooks-jobs.js';
import * as vipTierChanges from './2026-11-25T2100-vip-tier-changes.js';
import * as jobsLeased from './2026-11-27T0000-jobs-leased.js';
import * as referrals from './2026-11-27T0100-referrals.js';
import * as rewardUsage from './2026-11-27T1000-reward-usage.js';
import * as pointsExpiry from './2026-11-27T1100-points-expiry.js';
import * as recurringRuns from './2026-11-27T1200-recurring-runs.js';
import * as vipPeriods from './2026-11-27T1300-vip-periods.js';
import * as imports from './2026-11-27T1400-imports.js';
import * as importUploads from './2026-11-27T1500-import-uploads.js';
import * as listIndexes from './2026-11-27T1600-list-indexes.js';
import * as vipPlacements from './2026-11-28T0000-vip-placements.js';
import * as webhookEndpointOwners from './2026-11-28T0100-webhook-endpoint-owners.js';
import * as openingBalances from './2026-11-29T0000-opening-balances.js';
import * as referralMailboxes from './2026-11-29T0100-referral-mailboxes.js';
import * as serverSettings from './2026-11-29T0200-server-settings.js';
import * as webhookAttemptDeliveries from './2026-11-29T0300-webhook-attempt-deliveries.js';
import * as customersUpdatedMinute from './2026-11-29T0400-customers-updated-minute.js';

/** Every migration, by name; names sort in the order they run. */
export const migrations: Record<string, Migration> = {
  '2026-11-22T0000-initial': initial,
  '2026-11-22T0200-oauth': oauth,
  '2026-11-22T0300-earning-rules-version': earningRulesVersion,
  '2026-11-22T0400-change-notifications': changeNotifications,
  '2026-11-22T0500-identities-fillfactor': identitiesFillfactor,
  '2026-11-22T0600-access-token-grant': accessTokenGrant,
  '2026-11-23T0100-access-token-grant-backfill': accessTokenGrantBackfill,
  '2026-11-24T0000-points-engine': pointsEngine,
  '2026-11-24T0100-points-products': pointsProducts,
  '2026-11-24T0200-session-idle': sessionIdle,
  '2026-11-25T0000-activity-type-names': activityTypeNames,
  '2026-11-25T0100-console-keys-and-staff': consoleKeysAndStaff,
  '2026-11-25T1200-sign-in-delays': signInDelays,
  '2026-11-25T2000-events-webhooks-jobs': eventsWebhooksJobs,
  '2026-11-25T2100-vip-tier-changes': vipTierChanges,
  '2026-11-27T0000-jobs-leased': jobsLeased,
  '2026-11-27T0100-referrals': referrals,
  '2026-11-27T1000-reward-usage': rewardUsage,
  '2026-11-27T1100-points-expiry': pointsExpiry,
  '2026-11-27T1200-recurring-runs': recurringRuns,
  '2026-11-27T1300-vip-periods': vipPeriods,
  '2026-11-27T1400-imports': imports,
  '2026-11-27T1500-import-uploads': importUploads,
  '2026-11-27T1600-list-indexes': listIndexes,
  '2026-11-28T0000-vip-placements': vipPlacements,
  '2026-11-28T0100-webhook-endpoint-owners': webhookEndpointOwners,
  '2026-11-29T0000-opening-balances': openingBalances,
  '2026-11-29T0100-referral-mailboxes': referralMailboxes,
  '2026-11-29T0200-server-settings': serverSettings,
  '2026-11-29T0300-webhook-attempt-deliveries': webhookAttemptDeliveries,
  '2026-11-29T0400-customers-updated-minute': customersUpdatedMinute,
};
