import { defineRoom } from '../room.js';

/** Imports: customers with their balances from CSV files (the console's, a job). */
export const importsRoom = defineRoom({
  name: 'imports',
  jobs: (services) => [services.imports.job()],
});
