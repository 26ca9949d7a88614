import { AccountsService } from './accounts/service.js';
import { ActivitiesService } from './activities/service.js';
import { ActivityTypesService } from './activity-types/service.js';
import { AdminService } from './admin/service.js';
import { AppsService } from './apps/service.js';
import { TokenRevocations } from './auth/revocations.js';
import { AuthService } from './auth/service.js';
import type { Clock } from './clock.js';
import { type Config, DEFAULT_EVENT_SETTINGS, type EventSettings, referralBaseUrl } from './config.js';
import { CustomerIdentitiesService } from './customer-identities/service.js';
import { CustomersService } from './customers/service.js';
import { EarningRulesService } from './earning-rules/service.js';
import { EventsService } from './events/service.js';
import { ExportsService } from './exports/service.js';
import { IdempotencyService } from './idempotency/service.js';
import { ImportsService } from './imports/service.js';
import { JobsService } from './jobs/service.js';
import { OAuthService } from './oauth/service.js';
import { PointsExpiryService } from './points-expiry/service.js';
import { PointsProductsService } from './points-products/service.js';
import { PointsSettingsService } from './points-settings/service.js';
import { PointsTransactionsService } from './points-transactions/service.js';
import { ReferralSettingsService } from './referral-settings/service.js';
import { ReferralsService } from './referrals/service.js';
import { RewardFulfillmentsService } from './reward-fulfillments/service.js';
import { SessionsService } from './sessions/service.js';
import type { Db } from './storage/db.js';
import { UnitOfWork } from './storage/unit-of-work.js';
import { UsersService } from './users/service.js';
import { VipTiersService } from './vip-tiers/service.js';
import { WebhookFanOut } from './webhooks/fan-out.js';
import { WebhooksService } from './webhooks/service.js';

/**
 * The services the front doors (HTTP routes, the console and the `loyalty` CLI) call: one per
 * room, built by createServices.
 */
export interface Services {
  accounts: AccountsService;
  activities: ActivitiesService;
  activityTypes: ActivityTypesService;
  admin: AdminService;
  apps: AppsService;
  auth: AuthService;
  customerIdentities: CustomerIdentitiesService;
  customers: CustomersService;
  earningRules: EarningRulesService;
  events: EventsService;
  exports: ExportsService;
  idempotency: IdempotencyService;
  imports: ImportsService;
  jobs: JobsService;
  oauth: OAuthService;
  pointsExpiry: PointsExpiryService;
  pointsProducts: PointsProductsService;
  pointsSettings: PointsSettingsService;
  pointsTransactions: PointsTransactionsService;
  referralSettings: ReferralSettingsService;
  referrals: ReferralsService;
  rewardFulfillments: RewardFulfillmentsService;
  sessions: SessionsService;
  users: UsersService;
  vipTiers: VipTiersService;
  webhooks: WebhooksService;
}

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
 * Builds every room's service, each from the ones below it: the order of the statements is the
 * order of the rooms, from those that depend on nothing (accounts, jobs) up to the ledger's writers
 * and the moves of whole files, so that a service can only be given one already built (the
 * compiler refuses the others) and no two rooms reach each other.
 */
export function createServices(db: Db, options: ServiceOptions): Services {
  const { clock, accessTokenTtlSeconds } = options;
  const kysely = db.kysely;
  const uow = new UnitOfWork(kysely, clock);
  const settings = options.events ?? DEFAULT_EVENT_SETTINGS;

  const accounts = new AccountsService(kysely, clock);
  const apps = new AppsService(kysely, uow);
  const jobs = new JobsService(db, clock);
  const idempotency = new IdempotencyService(kysely, uow);
  const admin = new AdminService(kysely, clock);
  const users = new UsersService(kysely, uow, accounts);
  const sessions = new SessionsService(kysely, clock, users, accounts);
  const auth = new AuthService(
    kysely,
    uow,
    clock,
    accounts,
    (clientId) => apps.requireByClientId(clientId),
    accessTokenTtlSeconds,
    new TokenRevocations(),
  );
  const activityTypes = new ActivityTypesService(kysely, uow, accounts);
  const pointsSettings = new PointsSettingsService(kysely, uow, accounts);
  const earningRules = new EarningRulesService(db, uow, accounts, activityTypes, clock);
  const referralSettings = new ReferralSettingsService(db, uow, accounts, activityTypes);
  // Events announce what they record to their subscribers through a port of their own
  // (events/subscribers.ts), which the webhooks room implements: events know nothing of webhooks.
  const events = new EventsService(kysely, uow, clock, settings.retentionDays, new WebhookFanOut(jobs));
  const webhooks = new WebhooksService({ db: kysely, uow, clock, jobs, events, settings });
  const oauth = new OAuthService(kysely, uow, clock, apps, auth, accessTokenTtlSeconds, webhooks);
  const vipTiers = new VipTiersService(kysely, clock, uow, accounts, events, jobs);
  const customers = new CustomersService(
    kysely,
    uow,
    clock,
    accounts,
    vipTiers,
    events,
    options.referralBaseUrl ?? DEFAULT_REFERRAL_BASE_URL,
  );
  const customerIdentities = new CustomerIdentitiesService(db, uow, accounts, customers);
  const pointsTransactions = new PointsTransactionsService(kysely, clock, idempotency, customers, vipTiers, events);
  const rewardFulfillments = new RewardFulfillmentsService(kysely, clock, events, customers, pointsTransactions, uow);
  const referrals = new ReferralsService(
    kysely,
    clock,
    uow,
    referralSettings,
    customers,
    pointsTransactions,
    rewardFulfillments,
    events,
  );
  const activities = new ActivitiesService(
    kysely,
    clock,
    uow,
    activityTypes,
    earningRules,
    customers,
    pointsTransactions,
    events,
    referrals,
    rewardFulfillments,
  );
  const pointsProducts = new PointsProductsService(
    kysely,
    clock,
    uow,
    accounts,
    pointsSettings,
    customers,
    pointsTransactions,
    rewardFulfillments,
    events,
  );
  const pointsExpiry = new PointsExpiryService(
    kysely,
    clock,
    uow,
    pointsSettings,
    customers,
    pointsTransactions,
    events,
  );
  const imports = new ImportsService(
    kysely,
    clock,
    uow,
    accounts,
    customers,
    pointsTransactions,
    vipTiers,
    customerIdentities,
    jobs,
  );
  const exports = new ExportsService(
    db,
    clock,
    accounts,
    customers,
    pointsTransactions,
    rewardFulfillments,
    activities,
  );
  return {
    accounts,
    activities,
    activityTypes,
    admin,
    apps,
    auth,
    customerIdentities,
    customers,
    earningRules,
    events,
    exports,
    idempotency,
    imports,
    jobs,
    oauth,
    pointsExpiry,
    pointsProducts,
    pointsSettings,
    pointsTransactions,
    referralSettings,
    referrals,
    rewardFulfillments,
    sessions,
    users,
    vipTiers,
    webhooks,
  };
}
