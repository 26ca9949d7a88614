import type { Command } from 'commander';
import { migrateToLatest } from '../../storage/migrator.js';
import { run } from '../context.js';

export function registerMigrateCommand(program: Command): void {
  program
    .command('migrate')
    .description('apply pending database migrations (the server also does this at start)')
    .action((_opts, cmd: Command) =>
      run(
        cmd,
        async ({ db }) => ({ database: db.location, applied: await migrateToLatest(db) }),
        (r) =>
          r.applied.length === 0
            ? `database ${r.database} was already up to date`
            : `database ${r.database}: applied ${r.applied.join(', ')}`,
        { migrate: false },
      ),
    );
}
