import { defineRoom } from '../room.js';

/** Imports: customers with their balances from CSV files (the console's, a job). */
export const importsRoom = defineRoom({
  jobs: (services) => [services.imports.job()],
});
