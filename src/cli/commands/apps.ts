import type { Command } from 'commander';
import { lines, run } from '../context.js';

const collect = (value: string, previous: string[] = []) => [...previous, value];

export function registerAppCommands(program: Command): void {
  const apps = program.command('apps').description('OAuth apps (the client secret is shown once, at creation)');
  apps
    .command('create')
    .description('register an app')
    .requiredOption('--name <name>', 'the app name shown to merchants')
    .option('--scopes <scopes>', 'space-separated scopes the app may ask for (default: every scope)')
    .option('--redirect-uri <uri>', 'an exact redirect URI (repeat for several)', collect)
    .option('--public', 'a public client without a secret (must use PKCE)')
    .action((opts: { name: string; scopes?: string; redirectUri?: string[]; public?: boolean }, cmd: Command) =>
      run(
        cmd,
        async ({ services }) => {
          const app = await services.apps.create({
            name: opts.name,
            scopes: opts.scopes,
            redirectUris: opts.redirectUri ?? [],
            public: opts.public ?? false,
          });
          return {
            id: app.id,
            client_id: app.client_id,
            client_secret: app.client_secret,
            scopes: app.scopes,
            redirect_uris: app.redirect_uris,
          };
        },
        (a) =>
          `${lines({ id: a.id, client_id: a.client_id, client_secret: a.client_secret ?? '(none: a public client)', scopes: a.scopes.join(' '), redirect_uris: a.redirect_uris.join(' ') || '(none)' })}\n` +
          (a.client_secret === null
            ? 'A public client has no secret: it must use PKCE (code_challenge with S256) and may redirect to any port of a loopback URI.'
            : 'Store the client secret now: it is not shown again.'),
      ),
    );
  apps
    .command('list')
    .description('list the apps')
    .action((_opts, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.apps.list(),
        (all) => all.map((a) => `${a.id}\t${a.client_id}\t${a.name}\t${a.scopes.join(' ')}`).join('\n') || '(no apps)',
      ),
    );
}
