import { AccountsService } from './accounts/service.js';
import { AppsService } from './apps/service.js';
import { CredentialsService } from './auth/service.js';
import type { Clock } from './clock.js';
import { CustomerIdentitiesService } from './customer-identities/service.js';
import { CustomersService } from './customers/service.js';
import { EarningRulesService } from './earning-rules/service.js';
import { OAuthService } from './oauth/service.js';
import { SessionsService } from './oauth/sessions.js';
import { ReferralSettingsService } from './referral-settings/service.js';
import type { Db } from './storage/db.js';
import { UsersService } from './users/service.js';

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
  return {
    accounts,
    apps,
    credentials: new CredentialsService(
      db.kysely,
      clock,
      accounts,
      (clientId) => apps.requireByClientId(clientId),
      options.accessTokenTtlSeconds,
    ),
    referralSettings: new ReferralSettingsService(db, clock, accounts),
    customers,
    customerIdentities: new CustomerIdentitiesService(db, clock, accounts, customers),
    earningRules: new EarningRulesService(db, clock, accounts),
    users,
    sessions: new SessionsService(db.kysely, clock, users, accounts),
    oauth: new OAuthService(db.kysely, clock, apps, options.accessTokenTtlSeconds),
  };
}
