import type { Command } from 'commander';
import { parseId, readJsonFile, run } from '../context.js';

export function registerReferralSettingsCommands(program: Command): void {
  const settings = program.command('referral-settings').description("an account's referral program");
  settings
    .command('set')
    .description('create or replace the referral settings from a JSON file (a ReferralSettings object)')
    .requiredOption('--account <id>', 'the account')
    .requiredOption('--file <path>', 'the JSON file, or - for stdin')
    .action((opts: { account: string; file: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.referralSettings.set(parseId(opts.account, 'account'), readJsonFile(opts.file)),
        (s) => JSON.stringify(s, null, 2),
      ),
    );
  settings
    .command('show')
    .description('print the referral settings')
    .requiredOption('--account <id>', 'the account')
    .action((opts: { account: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.referralSettings.get(parseId(opts.account, 'account')),
        (s) => JSON.stringify(s, null, 2),
      ),
    );
  settings
    .command('delete')
    .description('delete the referral settings (GET /v1/referral_settings then answers 404)')
    .requiredOption('--account <id>', 'the account')
    .action((opts: { account: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.referralSettings.delete(parseId(opts.account, 'account')),
        () => 'referral settings deleted',
      ),
    );
}
