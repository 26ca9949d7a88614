import { configDefaults, defineConfig } from 'vitest/config';

// Two passes: SQLite always, PostgreSQL when TEST_DATABASE_URL names a server (each test then gets
// a schema of its own, dropped after). Both passes run every test file but those of SQLITE_ONLY.
const postgresUrl = process.env.TEST_DATABASE_URL;
if (!postgresUrl) {
  console.warn(
    '\n[loyalty] PostgreSQL pass skipped: TEST_DATABASE_URL is not set. ' +
      'Set it (for example TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test) to run the suites on PostgreSQL too.\n',
  );
}

/**
 * The files that run on SQLite only. Every other test file runs on both engines, so a new folder
 * runs on PostgreSQL without being listed anywhere. A file belongs here only if it never reaches
 * the pass's database, so that a second pass would run the very same thing again.
 */
const SQLITE_ONLY = [
  // Reads the source files (the import rules of the rooms): no database.
  'test/architecture/**',
  // Parses environments into a Config: no database.
  'test/config.test.ts',
  // The server process with the environment a newcomer has: the embedded SQLite default, or a
  // configuration it refuses before opening anything. Never the pass's TEST_DATABASE_URL.
  'test/server/process.test.ts',
  // Pure functions: cursors, activity time windows, form wording, identity helpers.
  'test/earning-rules/cursor.test.ts',
  'test/activities/window.test.ts',
  'test/admin/form-wording.test.ts',
  'test/customer-identities/service.test.ts',
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
    // once per file (~0.5 s each). The app keeps nothing but caches in its modules (each test,
    // or each file whose tests only read, builds its own app), and test/helpers/setup.ts runs again
    // before every file.
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
              test: {
                name: 'postgres',
                include: ['test/**/*.test.ts'],
                exclude: [...configDefaults.exclude, ...SQLITE_ONLY],
                env: { LOYALTY_TEST_ENGINE: 'postgres' },
              },
            },
          ]
        : []),
    ],
  },
});
