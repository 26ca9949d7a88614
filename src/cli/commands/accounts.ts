import type { Command } from 'commander';
import { lines, run } from '../context.js';

export function registerAccountCommands(program: Command): void {
  const accounts = program.command('accounts').description('merchant accounts');
  accounts
    .command('create')
    .description('create a merchant account')
    .requiredOption('--name <name>', 'the account name')
    .action((opts: { name: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.accounts.create(opts.name),
        (a) => lines({ id: a.id, name: a.name }),
      ),
    );
  accounts
    .command('list')
    .description('list the accounts')
    .action((_opts, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.accounts.list(),
        (all) => all.map((a) => `${a.id}\t${a.name}`).join('\n') || '(no accounts)',
      ),
    );
}
