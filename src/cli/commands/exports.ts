import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import type { Writable } from 'node:stream';
import { type Command, Option } from 'commander';
import { invalidParameter } from '../../errors.js';
import { EXPORT_FILTERS, EXPORT_FORMATS, EXPORT_KINDS, type ExportKind } from '../../exports/service.js';
import { fileProblem } from '../../imports/refusals.js';
import { parseId, run } from '../context.js';

// `loyalty export …`: an account's records as CSV or JSON Lines, to a file or stdout (docs/imports.md).

/** Each kind's subcommand: its records in words, and what an export of them holds. */
const KINDS: Record<ExportKind, { words: string; description: string }> = {
  customers: {
    words: 'customers',
    description:
      "customers with the import's columns (email, first_name, last_name, date_of_birth, state, points_balance, " +
      'points_earned, then id, vip_tier_id, referral_url, created_at): an export imports into another account as it is',
  },
  'points-transactions': {
    words: 'points transactions',
    description:
      'the points ledger, as the API shows it (id, customer_id, points_change, description, internal_note, ' +
      'activity_id, points_purchase_id, created_at, updated_at)',
  },
  'reward-fulfillments': {
    words: 'reward fulfillments',
    description:
      'the rewards issued, with their codes, as the API shows them (id, name, code, customer_id, fulfillment_status, ' +
      'image_url, action_text, action_url, usage_instructions, terms_and_conditions, expires_at, usage_status, ' +
      'used_at, created_at, updated_at)',
  },
  activities: {
    words: 'activities',
    description:
      'the activities, with their tokens (id, customer_id, token, distinct_id, properties as JSON, ' +
      'created_on_origin_at, created_at, updated_at)',
  },
};

/** The option of each filter (the API's query parameter, in kebab case) and its help, given the records' words. */
const FILTER_OPTIONS: Record<string, (words: string) => Option> = {
  email: () => new Option('--email <email>', 'only the customer with this email (matched as the API matches it)'),
  state: () => new Option('--state <state>', 'only customers in this state: candidate, member or disabled'),
  customer_id: (words) => new Option('--customer-id <id>', `only the ${words} of this customer`),
  fulfillment_status: () =>
    new Option(
      '--fulfillment-status <status>',
      'only fulfillments in this state: pending, issued, cancelled or failed',
    ),
  usage_status: () =>
    new Option(
      '--usage-status <status>',
      'only fulfillments in this use: used, unused, expired or untracked (a cancelled code reads unused: add ' +
        '--fulfillment-status issued for the codes still to be used)',
    ),
  code: () =>
    new Option('--code <code>', 'only the fulfillment with this code (case, spaces and dashes do not matter)'),
  updated_at_min: (words) =>
    new Option('--updated-at-min <time>', `only ${words} updated at or after this ISO 8601 time`),
};

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

/** `file` opened for writing, or `invalid_parameter` saying why it cannot be (no such folder, …). */
async function opening(file: string): Promise<WriteStream> {
  const out = createWriteStream(file);
  try {
    await once(out, 'open');
  } catch (error) {
    throw invalidParameter('output', `cannot be written: ${fileProblem(error, file)}`);
  }
  // A failure later (a full disk) rejects the write that meets it; this keeps it from being thrown unheard.
  out.on('error', () => undefined);
  return out;
}

export function registerExportCommands(program: Command): void {
  const exports = program.command('export').description("take an account's records out, as CSV or JSON Lines");
  for (const kind of EXPORT_KINDS) {
    const { words, description } = KINDS[kind];
    const command = exports
      .command(kind)
      .description(description)
      .requiredOption('--account <id>', 'the account')
      .option('--format <format>', EXPORT_FORMATS.join(' or '), 'csv')
      .option('--output <file>', 'write to this file (default: stdout)');
    const filters = EXPORT_FILTERS[kind].map((name) => ({ name, option: FILTER_OPTIONS[name]!(words) }));
    for (const { option } of filters) command.addOption(option);
    command.action((opts: Record<string, string | undefined>, cmd: Command) =>
      run(
        cmd,
        async ({ services }) => {
          const file = opts.output;
          // The file is made at the export's first write, once its filters passed: a refused one leaves none.
          let out: Promise<WriteStream> | undefined;
          const opened = () => {
            out ??= opening(file!);
            return out;
          };
          const exported = await services.exports.export(
            kind,
            parseId(opts.account ?? '', 'account'),
            opts.format ?? 'csv',
            Object.fromEntries(filters.map(({ name, option }) => [name, opts[option.attributeName()]])),
            file === undefined ? sinkTo(process.stdout) : async (text) => sinkTo(await opened())(text),
          );
          if (file === undefined) return undefined;
          await closed(await opened());
          return { exported, file };
        },
        (done) => `exported ${done?.exported} ${words} to ${done?.file}`,
      ),
    );
  }
}
