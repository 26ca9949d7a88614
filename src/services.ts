import { AccountsService } from './accounts/service.js';
import { ActivitiesService } from './activities/service.js';
import { ActivityTypesService } from './activity-types/service.js';
import { ReportsService } from './admin/service.js';
import { AppsService } from './apps/service.js';
import { TokenRevocations } from './auth/revocations.js';
import { CredentialsService } from './auth/service.js';
import type { Clock } from './clock.js';
import { CustomerIdentitiesService } from './customer-identities/service.js';
import { CustomersService } from './customers/service.js';
import { EarningRulesService } from './earning-rules/service.js';
import { IdempotencyService } from './idempotency/service.js';
import { OAuthService } from './oauth/service.js';
import { SessionsService } from './oauth/sessions.js';
import { PointsProductsService } from './points-products/service.js';
import { PointsSettingsService } from './points-settings/service.js';
import { PointsTransactionsService } from './points-transactions/service.js';
import { ReferralSettingsService } from './referral-settings/service.js';
import { RewardFulfillmentsService } from './reward-fulfillments/service.js';
import type { Db } from './storage/db.js';
import { UsersService } from './users/service.js';
import { VipTiersService } from './vip-tiers/service.js';

/** The services both front doors (HTTP routes and the `loyalty` CLI) call. */
export interface Services {
  accounts: AccountsService;
  apps: AppsService;
  credentials: CredentialsService;
  referralSettings: ReferralSettingsService;
  customers: CustomersService;
  customerIdentities: CustomerIdentitiesService;
  earningRules: EarningRulesService;
  users: UsersService;
  sessions: SessionsService;
  oauth: OAuthService;
  activityTypes: ActivityTypesService;
  activities: ActivitiesService;
  pointsTransactions: PointsTransactionsService;
  vipTiers: VipTiersService;
  pointsSettings: PointsSettingsService;
  pointsProducts: PointsProductsService;
  rewardFulfillments: RewardFulfillmentsService;
  reports: ReportsService;
}

export interface ServiceOptions {
  clock: Clock;
  accessTokenTtlSeconds: number;
}

export function createServices(db: Db, options: ServiceOptions): Services {
  const { clock } = options;
  const accounts = new AccountsService(db.kysely, clock);
  const apps = new AppsService(db.kysely, clock);
  const users = new UsersService(db.kysely, clock, accounts);
  const customers = new CustomersService(db.kysely, clock, accounts);
  const idempotency = new IdempotencyService(db.kysely, clock);
  const pointsTransactions = new PointsTransactionsService(db.kysely, clock, idempotency);
  const pointsSettings = new PointsSettingsService(db.kysely, clock, accounts);
  const revocations = new TokenRevocations();
  return {
    accounts,
    apps,
    credentials: new CredentialsService(
      db.kysely,
      clock,
      accounts,
      (clientId) => apps.requireByClientId(clientId),
      options.accessTokenTtlSeconds,
      revocations,
    ),
    referralSettings: new ReferralSettingsService(db, clock, accounts),
    customers,
    customerIdentities: new CustomerIdentitiesService(db, clock, accounts, customers),
    earningRules: new EarningRulesService(db, clock, accounts),
    users,
    sessions: new SessionsService(db.kysely, clock, users, accounts),
    oauth: new OAuthService(db.kysely, clock, apps, options.accessTokenTtlSeconds, revocations),
    activityTypes: new ActivityTypesService(db.kysely, clock, accounts),
    activities: new ActivitiesService(db.kysely, clock, customers, pointsTransactions),
    pointsTransactions,
    vipTiers: new VipTiersService(db.kysely, clock, accounts),
    pointsSettings,
    pointsProducts: new PointsProductsService(
      db.kysely,
      clock,
      accounts,
      pointsSettings,
      pointsTransactions,
      idempotency,
    ),
    rewardFulfillments: new RewardFulfillmentsService(db.kysely, clock),
    reports: new ReportsService(db.kysely, clock),
  };
}
