import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, loyalty, loyaltyInProcess } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

const rule = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  image_url: 'https://cdn.example/rule.svg',
  reward: { type: 'points' },
  reward_value: { type: 'fixed', fixed: { value: 100 } },
  earning_limit: { max: 1, type: 'lifetime' },
  ...extra,
});

describe('loyalty earning-rules', () => {
  // The files the commands read; the database is the pass's (test/helpers/database.ts).
  let dir: string;
  let database: TestDatabase;
  let env: Record<string, string>;
  let account: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loyalty-cli-rules-'));
    database = await createTestDatabase();
    env = { DATABASE_URL: database.url };
    account = String((await ok(['accounts', 'create', '--name', 'Acme'])).id);
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await database.drop();
  });

  /**
   * Runs a command with --json; it must succeed with nothing on stderr. Commands run in this
   * process; given stdin `input`, and in the tests that say so, in the real `loyalty` process.
   */
  async function ok(args: string[], input?: string): Promise<any> {
    const result = await (input === undefined
      ? loyaltyInProcess([...args, '--json'], env)
      : loyalty([...args, '--json'], env, input));
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    return result.json();
  }
  /** Runs a command that must fail: non-zero exit, nothing on stdout, the error on stderr. */
  async function fails(args: string[], cli: typeof loyalty = loyaltyInProcess): Promise<CliResult> {
    const result = await cli(args, env);
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).not.toBe('');
    return result;
  }
  const file = (name: string, content: unknown) => {
    const path = join(dir, name);
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
    return path;
  };

  it('creates one rule from a file and prints it with its id', async () => {
    const created = await ok([
      'earning-rules',
      'create',
      '--account',
      account,
      '--file',
      file('one.json', rule('Sign up', { action_text: 'Join', action_url: 'https://shop.example/join' })),
    ]);
    expect(created).toEqual({
      id: expect.any(Number),
      name: 'Sign up',
      image_url: 'https://cdn.example/rule.svg',
      action_text: 'Join',
      action_url: 'https://shop.example/join',
      restricted_to_vip_tier_ids: [],
      reward: { type: 'points' },
      reward_value: { type: 'fixed', fixed: { value: 100 } },
      earning_limit: { max: 1, type: 'lifetime' },
      enabled: true,
      activity_token: null,
    });
    const text = await loyaltyInProcess(
      ['earning-rules', 'create', '--account', account, '--file', file('one.json', rule('B'))],
      env,
    );
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^created earning rule \d+: B\n$/);
  });

  it('creates an array of 1,000 rules from a file, in order', async () => {
    const rules = Array.from({ length: 1000 }, (_, i) => rule(`bulk ${i}`, { enabled: i % 10 !== 0 }));
    const path = file('many.json', rules);
    const created = await ok(['earning-rules', 'create', '--account', account, '--file', path]);
    expect(created).toHaveLength(1000);
    expect(created.map((r: { name: string }) => r.name)).toEqual(rules.map((r) => r.name));
    expect(created.filter((r: { enabled: boolean }) => !r.enabled)).toHaveLength(100);
    const ids = created.map((r: { id: number }) => r.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));

    const text = await loyaltyInProcess(['earning-rules', 'create', '--account', account, '--file', path], env);
    expect(text.stdout).toMatch(/^created 1000 earning rules \(ids (\d+)–(\d+)\)\n$/);
    const [, from, to] = /ids (\d+)–(\d+)/.exec(text.stdout)!;
    expect(Number(to) - Number(from)).toBe(999);
  });

  // The real process: stdin is the process's own.
  it('reads the file from stdin with --file -', async () => {
    const created = await ok(
      ['earning-rules', 'create', '--account', account, '--file', '-'],
      JSON.stringify([rule('stdin')]),
    );
    expect(created).toEqual([expect.objectContaining({ name: 'stdin', id: expect.any(Number) })]);
  });

  it('disables, enables and deletes a rule, and lists with and without --all', async () => {
    const other = String((await ok(['accounts', 'create', '--name', 'Listing'])).id);
    const [a, b] = await ok([
      'earning-rules',
      'create',
      '--account',
      other,
      '--file',
      file('two.json', [rule('A'), rule('B')]),
    ]);

    expect(await ok(['earning-rules', 'disable', String(a.id)])).toEqual({ ...a, enabled: false });
    expect(await ok(['earning-rules', 'list', '--account', other])).toEqual([b]);
    expect(await ok(['earning-rules', 'list', '--account', other, '--all'])).toEqual([b, { ...a, enabled: false }]);
    const table = await loyaltyInProcess(['earning-rules', 'list', '--account', other, '--all'], env);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+ENABLED\s+NAME\s+REWARD\s+LIMIT$/);
    expect(table.stdout).toMatch(new RegExp(`${a.id}\\s+no\\s+A\\s+100 points\\s+1 per lifetime`));

    expect(await ok(['earning-rules', 'enable', String(a.id)])).toEqual(a);
    const disabledText = await loyaltyInProcess(['earning-rules', 'disable', String(a.id)], env);
    expect(disabledText.stdout).toBe(`earning rule ${a.id} disabled: A\n`);

    expect(await ok(['earning-rules', 'delete', String(a.id)])).toEqual({ deleted: true });
    expect(await ok(['earning-rules', 'list', '--account', other, '--all'])).toEqual([b]);
  });

  it('reports unknown ids and accounts as not_found on stderr, exit non-zero', async () => {
    for (const args of [
      ['earning-rules', 'disable', '99999999'],
      ['earning-rules', 'enable', '99999999'],
      ['earning-rules', 'delete', '99999999'],
      ['earning-rules', 'list', '--account', '99999999'],
      ['earning-rules', 'create', '--account', '99999999', '--file', file('nf.json', rule('x'))],
    ]) {
      const result = await fails([...args, '--json']);
      expect(JSON.parse(result.stderr).error.code, args.join(' ')).toBe('not_found');
    }
    const text = await fails(['earning-rules', 'delete', '99999999']);
    expect(text.stderr).toMatch(/^error: earning rule 99999999 does not exist/);
  });

  // The real process, as for stdin above.
  it('refuses a bad id argument', async () => {
    const result = await fails(['earning-rules', 'disable', 'abc', '--json'], loyalty);
    expect(JSON.parse(result.stderr).error).toMatchObject({ code: 'invalid_parameter', details: [{ field: 'id' }] });
  });

  it('refuses a missing file, a file that is not JSON, and an invalid rule naming the field', async () => {
    const missing = await fails([
      'earning-rules',
      'create',
      '--account',
      account,
      '--file',
      join(dir, 'nope.json'),
      '--json',
    ]);
    expect(JSON.parse(missing.stderr).error.code).toBe('invalid_parameter');

    const notJson = await fails([
      'earning-rules',
      'create',
      '--account',
      account,
      '--file',
      file('bad.json', '{"name": '),
      '--json',
    ]);
    expect(JSON.parse(notJson.stderr).error.code).toBe('invalid_request');

    const invalid = await fails([
      'earning-rules',
      'create',
      '--account',
      account,
      '--file',
      file('invalid.json', [rule('fine'), rule('bad', { reward_value: { type: 'fixed', fixed: { value: -5 } } })]),
      '--json',
    ]);
    const error = JSON.parse(invalid.stderr).error;
    expect(error.code).toBe('invalid_parameter');
    expect(error.details[0].field).toBe('earning_rules.1.reward_value.fixed.value');

    const text = await fails([
      'earning-rules',
      'create',
      '--account',
      account,
      '--file',
      file('invalid-one.json', rule('bad', { image_url: 'nope' })),
    ]);
    expect(text.stderr).toMatch(/^error: earning_rule\.image_url /);
  });

  it('creates nothing when any rule of an array is invalid', async () => {
    const fresh = String((await ok(['accounts', 'create', '--name', 'Atomic'])).id);
    const rules = [...Array.from({ length: 600 }, (_, i) => rule(`ok ${i}`)), rule('')];
    await fails(['earning-rules', 'create', '--account', fresh, '--file', file('atomic.json', rules)]);
    expect(await ok(['earning-rules', 'list', '--account', fresh, '--all'])).toEqual([]);
  });
});
