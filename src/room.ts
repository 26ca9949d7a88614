import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Clock } from './clock.js';
import type { Config, EventSettings } from './config.js';
import type { JobHandler } from './jobs/service.js';
import type { Services } from './services.js';
import type { Db } from './storage/db.js';
import type { UnitOfWork } from './storage/unit-of-work.js';

/** What a room's service is built from: storage, time, settings and the other rooms' services. */
export interface RoomContext {
  readonly db: Db;
  readonly clock: Clock;
  /** The one opener of transactions (storage/unit-of-work.ts). */
  readonly uow: UnitOfWork;
  readonly accessTokenTtlSeconds: number;
  /** Event retention and webhook delivery settings. */
  readonly events: EventSettings;
  /** Where customers' referral URLs point, without a trailing slash. */
  readonly referralBaseUrl: string;
  /** The other rooms' services, built on first use: a room never reaches into another's repository. */
  readonly services: Services;
}

/**
 * One room (a folder of src/ owning one resource): its service, added to `Services` by the room
 * itself (`declare module '../services.js'`), and its routes, if it answers HTTP. Listed once, in
 * src/rooms.ts; app.ts and services.ts loop over that list.
 */
export interface Room<K extends keyof Services = keyof Services> {
  readonly name: K;
  readonly service: (context: RoomContext) => Services[K];
  /** The routes, as a plugin; `never` options: each room's plugin takes its own (see routeOptions). */
  readonly routes?: FastifyPluginAsyncTypebox<never>;
  /** The routes' register options (a prefix, the config), when they take any. */
  readonly routeOptions?: (config: Config) => Record<string, unknown>;
  /** The room's background work (src/jobs/): the queues it runs on every server process's JobRunner. */
  readonly jobs?: (services: Services) => readonly JobHandler[];
}

/** Declares a room (typed against the service the room added to `Services`). */
export function defineRoom<K extends keyof Services>(room: Room<K>): Room<K> {
  return room;
}
