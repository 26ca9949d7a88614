import { defineRoom } from '../room.js';
import routes from './routes.js';
import { CustomerIdentitiesService } from './service.js';

declare module '../services.js' {
  interface Services {
    customerIdentities: CustomerIdentitiesService;
  }
}

/** Customer identities: records of outside systems linked to customers. */
export const customerIdentitiesRoom = defineRoom({
  name: 'customerIdentities',
  routes,
  service: ({ db, services, uow }) => new CustomerIdentitiesService(db, uow, services.accounts, services.customers),
});
