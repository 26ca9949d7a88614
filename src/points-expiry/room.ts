import { defineRoom } from '../room.js';

/** Points expiry: balances idle past the account's setting expire, with a reminder 14 days before. */
export const pointsExpiryRoom = defineRoom({
  jobs: (services) => [services.pointsExpiry.job()],
});
