import type { Command } from 'commander';
import { PROGRAM_FIELDS, PROGRAM_REWARD_FIELDS, type ReferralProgram } from '../../referral-settings/schemas.js';
import { specSettings } from '../../referral-settings/service.js';
import { parseId, readJsonFile, run } from '../context.js';

/**
 * What `set` prints: the stored program as the file gave it. A plain ReferralSettings object (the
 * spec's shape) prints as the spec's shape; a file with the program's other fields prints them all.
 */
function asGiven(input: unknown, program: ReferralProgram): unknown {
  const given = (input ?? {}) as Record<string, Record<string, unknown> | undefined>;
  const extended =
    PROGRAM_FIELDS.some((field) => given[field] !== undefined) ||
    (['sender_reward', 'receiver_reward'] as const).some((side) =>
      PROGRAM_REWARD_FIELDS.some((field) => given[side]?.[field] !== undefined),
    );
  return extended ? program : specSettings(program);
}

/** Whether any field of the program beyond the spec's differs from its default. */
function configured(program: ReferralProgram): boolean {
  const defaults = { minimum_amount: '0', window_days: 30, sender_limit_per_30_days: 50 } as const;
  return (
    program.qualifying_activity_token !== null ||
    program.landing_url !== null ||
    program.sender_reward.fulfillment !== 'code' ||
    program.receiver_reward.fulfillment !== 'code' ||
    (Object.keys(defaults) as (keyof typeof defaults)[]).some((field) => program[field] !== defaults[field])
  );
}

export function registerReferralSettingsCommands(program: Command): void {
  const settings = program.command('referral-settings').description("an account's referral program");
  settings
    .command('set')
    .description(
      'create or replace the referral settings from a JSON file: a ReferralSettings object, which may add what ' +
        'runs the program (docs/referrals.md): qualifying_activity_token, minimum_amount, window_days, ' +
        "landing_url, sender_limit_per_30_days, and each reward's fulfillment (code or points) and points",
    )
    .requiredOption('--account <id>', 'the account')
    .requiredOption('--file <path>', 'the JSON file, or - for stdin')
    .action((opts: { account: string; file: string }, cmd: Command) =>
      run(
        cmd,
        async ({ services }) => {
          const input = readJsonFile(opts.file);
          return asGiven(input, await services.referralSettings.set(parseId(opts.account, 'account'), input));
        },
        (s) => JSON.stringify(s, null, 2),
      ),
    );
  settings
    .command('show')
    .description('print the referral settings, with what runs the program once any of it is set')
    .requiredOption('--account <id>', 'the account')
    .action((opts: { account: string }, cmd: Command) =>
      run(
        cmd,
        async ({ services }) => {
          const accountId = parseId(opts.account, 'account');
          const settings = await services.referralSettings.get(accountId);
          const program = await services.referralSettings.program(accountId);
          return program && configured(program) ? program : settings;
        },
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
