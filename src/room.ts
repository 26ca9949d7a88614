import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Config } from './config.js';
import type { JobHandler } from './jobs/service.js';
import type { Services } from './services.js';

/**
 * One room (a folder of src/ owning one resource) as the server sees it: its routes, if it answers
 * HTTP, and its background work. Listed once, in src/rooms.ts; app.ts loops over that list. Its
 * service is built in src/services.ts, from the services of the rooms below it.
 */
export interface Room {
  /** The routes, as a plugin; `never` options: each room's plugin takes its own (see routeOptions). */
  readonly routes?: FastifyPluginAsyncTypebox<never>;
  /** The routes' register options (a prefix, the config), when they take any. */
  readonly routeOptions?: (config: Config) => Record<string, unknown>;
  /** The room's background work (src/jobs/): the queues it runs on every server process's JobRunner. */
  readonly jobs?: (services: Services) => readonly JobHandler[];
}

/** Declares a room. */
export function defineRoom(room: Room): Room {
  return room;
}
