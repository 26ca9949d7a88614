import { defineRoom } from '../room.js';
import { IdempotencyService } from './service.js';

declare module '../services.js' {
  interface Services {
    idempotency: IdempotencyService;
  }
}

/** The Idempotency-Key of the writes that move points. */
export const idempotencyRoom = defineRoom({
  name: 'idempotency',
  service: ({ db, uow }) => new IdempotencyService(db.kysely, uow),
});
