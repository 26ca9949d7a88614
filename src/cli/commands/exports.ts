import { createWriteStream, type WriteStream } from 'node:fs';
import type { Writable } from 'node:stream';
import type { Command } from 'commander';
import { EXPORT_FORMATS } from '../../exports/service.js';
import { parseId, run } from '../context.js';

// `loyalty export …`: an account's records as CSV or JSON Lines, to a file or stdout (docs/imports.md).

/** Writes `text` to `out`, waiting when its buffer is full (constant memory however long the export). */
function sinkTo(out: Writable) {
  return (text: string) =>
    new Promise<void>((resolve, reject) => {
      if (text === '') return resolve();
      const ok = out.write(text, (error) => (error ? reject(error) : undefined));
      if (ok) resolve();
      else out.once('drain', resolve);
    });
}

function closed(out: WriteStream): Promise<void> {
  return new Promise((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
}

export function registerExportCommands(program: Command): void {
  const exports = program.command('export').description("take an account's records out, as CSV or JSON Lines");
  exports
    .command('customers')
    .description(
      "customers with the import's columns (email, first_name, last_name, date_of_birth, state, points_balance, " +
        'points_earned, then id, vip_tier_id, referral_url, created_at): an export imports into another account as it is',
    )
    .requiredOption('--account <id>', 'the account')
    .option('--format <format>', EXPORT_FORMATS.join(' or '), 'csv')
    .option('--output <file>', 'write to this file (default: stdout)')
    .option('--email <email>', 'only the customer with this email (matched as the API matches it)')
    .option('--state <state>', 'only customers in this state: candidate, member or disabled')
    .option('--updated-at-min <time>', 'only customers changed at or after this ISO 8601 time')
    .action(
      (
        opts: {
          account: string;
          format: string;
          output?: string;
          email?: string;
          state?: string;
          updatedAtMin?: string;
        },
        cmd: Command,
      ) =>
        run(
          cmd,
          async ({ services }) => {
            const out = opts.output === undefined ? undefined : createWriteStream(opts.output);
            const filters = {
              ...(opts.email === undefined ? {} : { email: opts.email }),
              ...(opts.state === undefined ? {} : { state: opts.state as 'member' }),
              ...(opts.updatedAtMin === undefined ? {} : { updated_at_min: opts.updatedAtMin }),
            };
            const exported = await services.exports.customers(
              parseId(opts.account, 'account'),
              opts.format,
              filters,
              sinkTo(out ?? process.stdout),
            );
            if (!out) return undefined;
            await closed(out);
            return { exported, file: opts.output };
          },
          (done) => `exported ${done?.exported} customers to ${done?.file}`,
        ),
    );
}
