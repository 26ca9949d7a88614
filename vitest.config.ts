import { defineConfig } from 'vitest/config';

// Two passes over the suites that touch storage: SQLite always, PostgreSQL when
// TEST_DATABASE_URL names a server (each test then gets a schema of its own, dropped after).
const postgresUrl = process.env.TEST_DATABASE_URL;
if (!postgresUrl) {
  console.warn(
    '\n[loyalty] PostgreSQL pass skipped: TEST_DATABASE_URL is not set. ' +
      'Set it (for example TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test) to run the storage and HTTP suites on PostgreSQL too.\n',
  );
}

/** The suites that run on both engines: everything that reaches the database through the app. */
const BOTH_ENGINES = [
  'test/http/**/*.test.ts',
  'test/auth/**/*.test.ts',
  'test/storage/**/*.test.ts',
  'test/referral-settings/**/*.test.ts',
  'test/customer-identities/**/*.test.ts',
  'test/earning-rules/**/*.test.ts',
  'test/scale/**/*.test.ts',
  'test/reliability/**/*.test.ts',
  'test/oauth/**/*.test.ts',
  'test/users/**/*.test.ts',
  'test/customers/**/*.test.ts',
  'test/activities/**/*.test.ts',
  'test/points-transactions/**/*.test.ts',
  'test/vip-tiers/**/*.test.ts',
  'test/points-products/**/*.test.ts',
  'test/admin/**/*.test.ts',
  'test/client/**/*.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at a time, whatever the machine: the real-process suites (test/reliability,
    // test/scale) time their servers, and were measured stable beside one other file on two cores.
    // Each worker keeps its PostgreSQL schemas in a database of its own (test/helpers/postgres.ts).
    maxWorkers: 2,
    // A worker runs file after file in one process, loading the app's modules once rather than
    // once per file (~0.5 s each). The app keeps nothing but caches in its modules (each test
    // builds its own app), and test/helpers/setup.ts runs again before every file.
    isolate: false,
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/helpers/setup.ts'],
    projects: [
      {
        extends: true as const,
        test: { name: 'sqlite', include: ['test/**/*.test.ts'], env: { LOYALTY_TEST_ENGINE: 'sqlite' } },
      },
      ...(postgresUrl
        ? [
            {
              extends: true as const,
              test: { name: 'postgres', include: BOTH_ENGINES, env: { LOYALTY_TEST_ENGINE: 'postgres' } },
            },
          ]
        : []),
    ],
  },
});
