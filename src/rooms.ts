import { activitiesRoom } from './activities/room.js';
import { adminRoom } from './admin/room.js';
import { customerIdentitiesRoom } from './customer-identities/room.js';
import { customersRoom } from './customers/room.js';
import { earningRulesRoom } from './earning-rules/room.js';
import { eventsRoom } from './events/room.js';
import { importsRoom } from './imports/room.js';
import type { JobHandler } from './jobs/service.js';
import { oauthRoom } from './oauth/room.js';
import { pointsExpiryRoom } from './points-expiry/room.js';
import { pointsProductsRoom } from './points-products/room.js';
import { pointsSettingsRoom } from './points-settings/room.js';
import { pointsTransactionsRoom } from './points-transactions/room.js';
import { referralSettingsRoom } from './referral-settings/room.js';
import { referralsRoom } from './referrals/room.js';
import { rewardFulfillmentsRoom } from './reward-fulfillments/room.js';
import type { Room } from './room.js';
import type { Services } from './services.js';
import { vipTiersRoom } from './vip-tiers/room.js';
import { webhooksRoom } from './webhooks/room.js';

/**
 * Every room that answers HTTP or runs background work, the one place a new one is added. Routes
 * are registered in this order (the OpenAPI document lists paths in it). Services are built in
 * src/services.ts.
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
  pointsProductsRoom,
  rewardFulfillmentsRoom,
  referralsRoom,
  eventsRoom,
  webhooksRoom,
  oauthRoom,
  adminRoom,
];

/** The background work of every room (Room.jobs), for a server process's JobRunner. */
export function jobHandlers(services: Services): JobHandler[] {
  return rooms.flatMap((room) => (room.jobs ? [...room.jobs(services)] : []));
}
