import type { Command } from 'commander';
import { DomainError } from '../../errors.js';
import { lines, parseId, run } from '../context.js';

export function registerTokenCommands(program: Command): void {
  const tokens = program.command('tokens').description('app access tokens');
  tokens
    .command('issue')
    .description('issue an access token for an account and app, as if the merchant had approved the app')
    .requiredOption('--account <id>', 'the account')
    .requiredOption('--app <client-id>', "the app's client_id")
    .option('--scopes <scopes>', "space-separated scopes (default: all of the app's)")
    .option('--ttl <seconds>', 'lifetime in seconds (default: ACCESS_TOKEN_TTL_SECONDS, 3600)')
    .action((opts: { account: string; app: string; scopes?: string; ttl?: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) =>
          services.auth.issueAccessToken({
            accountId: parseId(opts.account, 'account'),
            clientId: opts.app,
            scopes: opts.scopes,
            ttlSeconds: opts.ttl === undefined ? undefined : parseId(opts.ttl, 'ttl'),
          }),
        (t) =>
          lines({ access_token: t.access_token, token_type: t.token_type, expires_in: t.expires_in, scope: t.scope }),
      ),
    );
  tokens
    .command('revoke')
    .description('revoke an access token (effective within 1 second)')
    .argument('<token>', 'the access token')
    .action((token: string, _opts, cmd: Command) =>
      run(
        cmd,
        async ({ services }) => {
          if (!(await services.auth.revokeAccessToken(token))) {
            throw new DomainError('not_found', 'no live access token matches');
          }
          return { revoked: true as const };
        },
        () => 'access token revoked',
      ),
    );
}
