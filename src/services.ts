import type { Clock } from './clock.js';
import { type Config, DEFAULT_EVENT_SETTINGS, type EventSettings, referralBaseUrl } from './config.js';
import type { JobHandler } from './jobs/service.js';
import type { RoomContext } from './room.js';
import { rooms } from './rooms.js';
import type { Db } from './storage/db.js';
import { UnitOfWork } from './storage/unit-of-work.js';

/**
 * The services both front doors (HTTP routes, the console and the `loyalty` CLI) call: one per
 * room, each room adding its own to this interface (`declare module` in its room.ts).
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging, one room at a time.
export interface Services {}

export interface ServiceOptions {
  clock: Clock;
  accessTokenTtlSeconds: number;
  /** Event retention and webhook delivery (the contract's defaults when absent). */
  events?: EventSettings;
  /** Where referral URLs point (config.ts referralBaseUrl); the default server's address when absent. */
  referralBaseUrl?: string;
}

/** The services' options of a server with `config`. */
export function serviceOptions(config: Config, clock: Clock): ServiceOptions {
  return {
    clock,
    accessTokenTtlSeconds: config.accessTokenTtlSeconds,
    events: config.events,
    referralBaseUrl: referralBaseUrl(config),
  };
}

/** Referral URLs of services built without a config (tests): the default server's address. */
const DEFAULT_REFERRAL_BASE_URL = 'http://127.0.0.1:3000/r';

/**
 * Builds every room's service. A service is built the first time another asks for it (so the
 * list's order does not matter); a room that needs itself, through others, is named at once.
 */
export function createServices(db: Db, options: ServiceOptions): Services {
  const built = new Map<string, unknown>();
  const building: string[] = [];
  const byName = new Map<string, (typeof rooms)[number]>(rooms.map((room) => [room.name, room]));
  const services = new Proxy({} as Services, {
    get: (_target, name) => {
      if (typeof name !== 'string') return undefined;
      if (built.has(name)) return built.get(name);
      const room = byName.get(name);
      if (!room) throw new Error(`no room provides the service "${name}" (src/rooms.ts lists them)`);
      if (building.includes(name)) {
        throw new Error(`the services depend on each other in a circle: ${[...building, name].join(' -> ')}`);
      }
      building.push(name);
      try {
        built.set(name, room.service(context));
      } finally {
        building.pop();
      }
      return built.get(name);
    },
  });
  const context: RoomContext = {
    db,
    clock: options.clock,
    uow: new UnitOfWork(db.kysely, options.clock),
    accessTokenTtlSeconds: options.accessTokenTtlSeconds,
    events: options.events ?? DEFAULT_EVENT_SETTINGS,
    referralBaseUrl: options.referralBaseUrl ?? DEFAULT_REFERRAL_BASE_URL,
    services,
  };
  const all: Record<string, unknown> = {};
  for (const room of rooms) all[room.name] = (services as unknown as Record<string, unknown>)[room.name];
  return all as unknown as Services;
}

/** The background work of every room (Room.jobs), for a server process's JobRunner. */
export function jobHandlers(services: Services): JobHandler[] {
  return rooms.flatMap((room) => (room.jobs ? [...room.jobs(services)] : []));
}
