import { accountsRoom } from './accounts/room.js';
import { activitiesRoom } from './activities/room.js';
import { activityTypesRoom } from './activity-types/room.js';
import { adminRoom } from './admin/room.js';
import { appsRoom } from './apps/room.js';
import { authRoom } from './auth/room.js';
import { customerIdentitiesRoom } from './customer-identities/room.js';
import { customersRoom } from './customers/room.js';
import { earningRulesRoom } from './earning-rules/room.js';
import { eventsRoom } from './events/room.js';
import { exportsRoom } from './exports/room.js';
import { idempotencyRoom } from './idempotency/room.js';
import { importsRoom } from './imports/room.js';
import { jobsRoom } from './jobs/room.js';
import { oauthRoom } from './oauth/room.js';
import { pointsExpiryRoom } from './points-expiry/room.js';
import { pointsProductsRoom } from './points-products/room.js';
import { pointsSettingsRoom } from './points-settings/room.js';
import { pointsTransactionsRoom } from './points-transactions/room.js';
import { referralSettingsRoom } from './referral-settings/room.js';
import { referralsRoom } from './referrals/room.js';
import { rewardFulfillmentsRoom } from './reward-fulfillments/room.js';
import type { Room } from './room.js';
import { sessionsRoom } from './sessions/room.js';
import { usersRoom } from './users/room.js';
import { vipTiersRoom } from './vip-tiers/room.js';
import { webhooksRoom } from './webhooks/room.js';

/**
 * Every room of the service, the one place a new one is added. Routes are registered in this
 * order (the OpenAPI document lists paths in it); services are built in any order, each on first
 * use by another.
 */
export const rooms: readonly Room[] = [
  referralSettingsRoom,
  customerIdentitiesRoom,
  earningRulesRoom,
  customersRoom,
  activitiesRoom,
  pointsTransactionsRoom,
  vipTiersRoom,
  pointsSettingsRoom,
  pointsExpiryRoom,
  importsRoom,
  exportsRoom,
  pointsProductsRoom,
  rewardFulfillmentsRoom,
  referralsRoom,
  eventsRoom,
  webhooksRoom,
  oauthRoom,
  adminRoom,
  accountsRoom,
  appsRoom,
  authRoom,
  usersRoom,
  sessionsRoom,
  activityTypesRoom,
  idempotencyRoom,
  jobsRoom,
] as Room[];
