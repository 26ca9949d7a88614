import type { Command } from 'commander';
import { accountName } from '../../accounts/service.js';
import { DomainError } from '../../errors.js';
import { lines, parseId, run, serverAddress } from '../context.js';

/** Piped passwords: only the first line counts; more than this is not a password. */
const MAX_STDIN_BYTES = 64 * 1024;

export function registerUserCommands(program: Command): void {
  const users = program
    .command('users')
    .description('merchant users (they sign in to the console at /admin and approve OAuth apps)');
  users
    .command('create')
    .description(
      'create a user of an account; the password is prompted for (without echo) on a terminal, ' +
        'or read from the first line of stdin when piped',
    )
    .option('--account <id>', 'the account the user belongs to')
    .option('--new-account <name>', 'instead of --account: create an account with this name for the user')
    .requiredOption('--email <email>', 'the email the user signs in with (unique across users)')
    .action((opts: { account?: string; newAccount?: string; email: string }, cmd: Command) => {
      let signIn = '';
      return run(
        cmd,
        async (ctx) => {
          const { services } = ctx;
          if ((opts.account === undefined) === (opts.newAccount === undefined)) {
            throw new DomainError(
              'invalid_parameter',
              'give the account: --account ID for an existing one, or --new-account NAME to create it',
            );
          }
          signIn = signInHint(serverAddress(ctx)?.url);
          if (opts.account !== undefined) {
            const accountId = parseId(opts.account, 'account');
            await services.accounts.require(accountId);
            return services.users.create(accountId, { email: opts.email, password: await readPassword() });
          }
          // The name is checked before the password is asked for.
          const name = accountName(opts.newAccount as string);
          const password = await readPassword();
          return services.users.createWithAccount(name, { email: opts.email, password });
        },
        (u) => `${lines({ id: u.id, account_id: u.account_id, email: u.email })}\n\n${signIn}`,
      );
    });
  users
    .command('list')
    .description("list an account's users (never their passwords)")
    .requiredOption('--account <id>', 'the account')
    .action((opts: { account: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.users.list(parseId(opts.account, 'account')),
        (list) =>
          list.length === 0
            ? 'No users yet: loyalty users create --account ID --email EMAIL'
            : list.map((u) => lines({ id: u.id, account_id: u.account_id, email: u.email })).join('\n\n'),
      ),
    );
  users
    .command('reset-password')
    .description(
      "set a user's new password and sign them out of every browser; the password is prompted for (without " +
        'echo) on a terminal, or read from the first line of stdin when piped',
    )
    .requiredOption('--email <email>', 'the email the user signs in with')
    .action((opts: { email: string }, cmd: Command) =>
      run(
        cmd,
        async ({ services }) => {
          const user = await services.users.resetPassword(opts.email, await readPassword());
          const signedOut = await services.sessions.endAllOf(user.id);
          return { ...user, sessions_ended: signedOut };
        },
        (u) =>
          `The password of ${u.email} (user ${u.id}) is changed; ${u.sessions_ended} signed-in ` +
          `session${u.sessions_ended === 1 ? '' : 's'} ended.`,
      ),
    );
}

/** Where the new user signs in: the console of the server started with this environment. */
function signInHint(url: string | undefined): string {
  return url === undefined
    ? "Sign in to the console at /admin on the server's address (PORT=0: the port it printed when it started)."
    : `Sign in to the console at ${url}/admin (with the server running: npm start).`;
}

/** The password: typed at a hidden prompt (twice) on a terminal, else the first line of stdin. */
async function readPassword(): Promise<string> {
  if (process.stdin.isTTY) {
    const password = await promptHidden('Password: ');
    const again = await promptHidden('Repeat the password: ');
    if (password !== again)
      throw passwordError('the two passwords differ; nothing was created', 'differs from the repeat');
    return password;
  }
  const input = await readStdin();
  const first = input.split(/\r?\n/)[0] ?? '';
  if (first === '') {
    throw passwordError(
      'a password is required: pipe it as the first line of stdin, or run on a terminal',
      'is required',
    );
  }
  return first;
}

/** A refusal of the password: `message` for the person at the shell, `detail` for the field. */
function passwordError(message: string, detail: string): DomainError {
  return new DomainError('invalid_parameter', message, [{ field: 'password', message: detail }]);
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buffer.length;
    if (size > MAX_STDIN_BYTES) throw passwordError('the password on stdin is too long', 'is too long');
    chunks.push(buffer);
    // The first line is all we need; stop waiting for the end of a long or endless stream.
    if (buffer.includes(0x0a)) break;
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Reads a line from the terminal without echoing it. The prompt goes to stderr so that stdout
 * carries only the result (one JSON value with --json).
 */
function promptHidden(prompt: string): Promise<string> {
  const stdin = process.stdin;
  // Echo goes off before the prompt shows: whatever is typed once the prompt is visible is hidden.
  stdin.setRawMode(true);
  process.stderr.write(prompt);
  stdin.resume();
  stdin.setEncoding('utf8');
  return new Promise((resolve, reject) => {
    let typed = '';
    const finish = (error: Error | null) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.removeListener('data', onData);
      process.stderr.write('\n');
      if (error) reject(error);
      else resolve(typed);
    };
    const onData = (data: string) => {
      for (const char of data) {
        if (char === '\r' || char === '\n' || char === '\u0004') return finish(null);
        if (char === '\u0003') return finish(new DomainError('invalid_request', 'cancelled'));
        if (char === '\u007f' || char === '\b') typed = [...typed].slice(0, -1).join('');
        else if (char >= ' ') typed += char;
      }
    };
    stdin.on('data', onData);
  });
}
