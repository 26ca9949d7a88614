import { defineRoom } from '../room.js';
import { UsersService } from './service.js';

declare module '../services.js' {
  interface Services {
    users: UsersService;
  }
}

/** Merchant users and their passwords. */
export const usersRoom = defineRoom({
  name: 'users',
  service: ({ db, services, uow }) => new UsersService(db.kysely, uow, services.accounts),
});
