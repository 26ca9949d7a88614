import { defineRoom } from '../room.js';
import routes from './routes.js';
import { CustomersService } from './service.js';

declare module '../services.js' {
  interface Services {
    customers: CustomersService;
  }
}

/** An account's customers. */
export const customersRoom = defineRoom({
  name: 'customers',
  routes,
  service: ({ clock, db, uow, services, referralBaseUrl }) =>
    new CustomersService(db.kysely, uow, clock, services.accounts, services.vipTiers, services.events, referralBaseUrl),
});
