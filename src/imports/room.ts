import { defineRoom } from '../room.js';
import { ImportsService } from './service.js';

declare module '../services.js' {
  interface Services {
    imports: ImportsService;
  }
}

/** Imports: customers with their balances from CSV files (the console's, a job). */
export const importsRoom = defineRoom({
  name: 'imports',
  service: ({ clock, db, uow, services }) =>
    new ImportsService(
      db.kysely,
      clock,
      uow,
      services.accounts,
      services.customers,
      services.pointsTransactions,
      services.vipTiers,
      services.customerIdentities,
      services.jobs,
    ),
  jobs: (services) => [services.imports.job()],
});
