import type { Command } from 'commander';
import type { StoredEarningRule } from '../../earning-rules/schemas.js';
import { parseId, readJsonFile, run } from '../context.js';

/** `loyalty earning-rules create | list | enable | disable | delete`. */
export function registerEarningRuleCommands(program: Command): void {
  const rules = program.command('earning-rules').description("an account's earning rules");
  rules
    .command('create')
    .description('create one earning rule (a JSON object) or many (a JSON array), all or nothing')
    .requiredOption('--account <id>', 'the account')
    .requiredOption('--file <path>', 'the JSON file, or - for stdin')
    .action((opts: { account: string; file: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.earningRules.create(parseId(opts.account, 'account'), readJsonFile(opts.file)),
        createdText,
      ),
    );
  rules
    .command('list')
    .description("list an account's earning rules, newest first")
    .requiredOption('--account <id>', 'the account')
    .option('--all', 'include disabled rules')
    .action((opts: { account: string; all?: boolean }, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.earningRules.listAll(parseId(opts.account, 'account'), Boolean(opts.all)),
        table,
      ),
    );
  for (const [name, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    rules
      .command(name)
      .description(enabled ? 'list a rule again in GET /v1/earning_rules' : 'hide a rule from GET /v1/earning_rules')
      .argument('<id>', 'the rule id')
      .action((id: string, _opts, cmd: Command) =>
        run(
          cmd,
          ({ services }) => services.earningRules.setEnabled(parseId(id), enabled),
          (rule) => `earning rule ${rule.id} ${enabled ? 'enabled' : 'disabled'}: ${rule.name}`,
        ),
      );
  }
  rules
    .command('delete')
    .description('delete a rule')
    .argument('<id>', 'the rule id')
    .action((id: string, _opts, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.earningRules.delete(parseId(id)),
        () => `earning rule ${id} deleted`,
      ),
    );
}

function createdText(created: StoredEarningRule | StoredEarningRule[]): string {
  if (!Array.isArray(created)) return `created earning rule ${created.id}: ${created.name}`;
  const first = created[0];
  const last = created.at(-1);
  if (!first || !last) return 'created 0 earning rules';
  if (first === last) return `created 1 earning rule (id ${first.id})`;
  return `created ${created.length} earning rules (ids ${first.id}–${last.id})`;
}

function table(all: StoredEarningRule[]): string {
  if (all.length === 0) return '(no earning rules)';
  const rows = all.map((r) => [String(r.id), r.enabled ? 'yes' : 'no', oneLine(r.name), reward(r), limit(r)]);
  const header = ['ID', 'ENABLED', 'NAME', 'REWARD', 'LIMIT'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const format = (cells: string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [format(header), ...rows.map(format)].join('\n');
}

function reward(rule: StoredEarningRule): string {
  const value = rule.reward_value;
  return value.type === 'fixed'
    ? `${value.fixed.value} ${rule.reward.type}`
    : `${value.variable.value} ${rule.reward.type} per ${value.variable.per_amount}`;
}

function limit(rule: StoredEarningRule): string {
  const l = rule.earning_limit;
  if (l === null) return 'none';
  if (l.type === 'lifetime') return `${l.max} per lifetime`;
  return `${l.max} per ${l.rolling.unit_count} ${l.rolling.unit}${l.rolling.unit_count === 1 ? '' : 's'}`;
}

// A name is free text: keep each rule on one row of the table.
function oneLine(text: string): string {
  return text.replace(/\p{Cc}+/gu, ' ');
}
