import { defineRoom } from '../room.js';
import { SessionsService } from './service.js';

declare module '../services.js' {
  interface Services {
    sessions: SessionsService;
  }
}

/** Page sessions of the console and the OAuth pages, their CSRF tokens and the sign-in throttle. */
export const sessionsRoom = defineRoom({
  name: 'sessions',
  service: ({ clock, db, services }) => new SessionsService(db.kysely, clock, services.users, services.accounts),
});
