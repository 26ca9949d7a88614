import type { Command } from 'commander';
import { lines, parseId, run } from '../context.js';

export function registerApiKeyCommands(program: Command): void {
  const keys = program.command('api-keys').description('merchant API keys (the key is shown once, at creation)');
  keys
    .command('create')
    .description('create an API key for an account')
    .requiredOption('--account <id>', 'the account')
    .option('--scopes <scopes>', 'space-separated scopes (default: every scope)')
    .option('--name <name>', 'what the key is for, shown in the console (default: "Unnamed key")')
    .action((opts: { account: string; scopes?: string; name?: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) =>
          services.auth.createApiKey(parseId(opts.account, 'account'), opts.scopes, { name: opts.name }),
        (k) =>
          `${lines({ id: k.id, key: k.key, scopes: k.scopes.join(' ') })}\nStore the key now: it is not shown again.`,
      ),
    );
  keys
    .command('list')
    .description("list an account's API keys (redacted)")
    .requiredOption('--account <id>', 'the account')
    .action((opts: { account: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.auth.listApiKeys(parseId(opts.account, 'account')),
        (all) =>
          all.map((k) => `${k.id}\t${k.key}\t${k.scopes.join(' ')}${k.revoked ? '\t(revoked)' : ''}`).join('\n') ||
          '(no API keys)',
      ),
    );
  keys
    .command('revoke')
    .description('revoke an API key by id (effective within 1 second)')
    .argument('<key-id>', 'the key id')
    .action((keyId: string, _opts, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.auth.revokeApiKey(parseId(keyId, 'key_id')),
        (r) => `API key ${r.id} revoked`,
      ),
    );
}
