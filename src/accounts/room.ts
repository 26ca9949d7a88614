import { defineRoom } from '../room.js';
import { AccountsService } from './service.js';

declare module '../services.js' {
  interface Services {
    accounts: AccountsService;
  }
}

/** Merchant accounts. */
export const accountsRoom = defineRoom({
  name: 'accounts',
  service: ({ clock, db }) => new AccountsService(db.kysely, clock),
});
