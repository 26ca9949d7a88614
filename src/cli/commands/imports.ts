import type { Command } from 'commander';
import { mapRefusal } from '../../imports/refusals.js';
import type { ImportProgress, ImportSummary } from '../../imports/schemas.js';
import { parseId, run } from '../context.js';

// `loyalty import customers`: a CSV file of customers with their balances (docs/imports.md).

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** `--map 'Old name=new_name'` options as a map, refused by name when one has no `=` (`invalid_parameter`). */
function renames(maps: readonly string[]): Map<string, string> {
  const renamed = new Map<string, string>();
  for (const map of maps) {
    const at = map.lastIndexOf('=');
    if (at <= 0 || at === map.length - 1) {
      const message = `must be 'Column in the file=import column', such as 'Points=points_balance', got "${map}"`;
      throw mapRefusal(message);
    }
    renamed.set(map.slice(0, at).trim(), map.slice(at + 1).trim());
  }
  return renamed;
}

export function registerImportCommands(program: Command): void {
  const imports = program.command('import').description('bring a program in from another platform');
  imports
    .command('customers')
    .description(
      'import customers with their balances from a CSV file (columns email, first_name, last_name, date_of_birth, ' +
        'state, points_balance, points_earned, distinct_id); a balance is imported once per customer; safe to run again; ' +
        'exits 0 when the file was read to the end',
    )
    .requiredOption('--account <id>', 'the account')
    .requiredOption('--file <path>', 'the CSV file (UTF-8, "," or ";" separated, a header line first)')
    .option(
      '--map <old=new>',
      "rename a column of the file, such as 'Points=points_balance' (repeat for several)",
      collect,
    )
    .option('--dry-run', 'check every row and write nothing')
    .option(
      '--set-balances',
      'set the balance of customers who already have an imported one to the file’s (one points transaction of the ' +
        'difference) instead of refusing their rows',
    )
    .action(
      (
        opts: { account: string; file: string; map?: string[]; dryRun?: boolean; setBalances?: boolean },
        cmd: Command,
      ) => {
        const json = Boolean(cmd.optsWithGlobals().json);
        const bar = json ? undefined : new ProgressBar();
        return run(
          cmd,
          async ({ services }) => {
            const summary = await services.imports.importCustomers(parseId(opts.account, 'account'), opts.file, {
              rename: renames(opts.map ?? []),
              dryRun: opts.dryRun === true,
              setBalances: opts.setBalances === true,
              onProgress: (progress) => bar?.show(progress),
            });
            bar?.end();
            return summary;
          },
          (summary) => summaryText(summary, opts.dryRun === true),
        );
      },
    );
}

function summaryText(summary: ImportSummary, dryRun: boolean): string {
  const lines = [
    `${dryRun ? 'checked (nothing written)' : 'imported'}: ${summary.rows} rows: ${summary.created} created, ` +
      `${summary.updated} updated, ${summary.unchanged} unchanged, ${summary.refused} refused`,
  ];
  for (const refusal of summary.refusals) lines.push(`  line ${refusal.line}: ${refusal.message}`);
  return lines.join('\n');
}

/** The progress line on stderr: share of the file read, rows, rows per second and time left. */
class ProgressBar {
  private readonly started = performance.now();
  private shownAt = 0;
  private drawn = false;

  show(progress: ImportProgress): void {
    const now = performance.now();
    if (now - this.shownAt < 100) return;
    this.shownAt = now;
    const share = progress.bytesTotal === 0 ? 1 : Math.min(1, progress.bytesRead / progress.bytesTotal);
    const seconds = (now - this.started) / 1000;
    const rate = seconds > 0 ? progress.rows / seconds : 0;
    const left = share > 0 ? (seconds / share) * (1 - share) : 0;
    const width = 24;
    const filled = Math.round(share * width);
    process.stderr.write(
      `\r[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${Math.floor(share * 100)}% · ` +
        `${progress.rows.toLocaleString('en')} rows · ${Math.round(rate).toLocaleString('en')} rows/s · ` +
        `${clock(left)} left · ${progress.refused.toLocaleString('en')} refused `,
    );
    this.drawn = true;
  }

  end(): void {
    if (this.drawn) process.stderr.write('\n');
  }
}

function clock(seconds: number): string {
  const s = Math.round(seconds);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}
