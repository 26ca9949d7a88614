import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loyalty, loyaltyInProcess } from '../helpers/cli.js';
import { createTestDatabase, storedText, type TestDatabase } from '../helpers/database.js';
import { type ServerProcess, startServer } from '../helpers/server-process.js';
import { eventually } from '../helpers/wait.js';
import { hiddenField } from '../oauth/helpers.js';

/** `demo --json`'s fields: the contract's four, those its curl lines need, and the console user. */
const DEMO_FIELDS = [
  'account_id',
  'api_key',
  'access_token',
  'base_url',
  'activity_token',
  'customer_id',
  'points_product_id',
  'referral_url',
  'console_url',
  'console_email',
  'console_password',
];

/** The address each printed curl line calls. */
function curlUrls(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('curl '))
    .map((line) => /^curl -s (?:-X POST )?'?(https?:\/\/[^\s']+)/.exec(line)?.[1] ?? `unreadable: ${line}`);
}

/** The console user the text output prints. */
function consoleUser(text: string): { url: string; email: string; password: string } {
  const field = (name: string) => new RegExp(`^ +${name}: +(\\S+)$`, 'm').exec(text)?.[1] ?? '';
  return { url: field('Console'), email: field('email'), password: field('password') };
}

// The address the demo takes from each setting. In this process (loyaltyInProcess: the same
// program, with the environment given), on one database: each case makes a demo account of its
// own, and no server is ever started on it, so none is "the last server started". The real
// process runs in the refusals below and against a real server.
describe('loyalty demo: the address of its curl lines and console', () => {
  let database: TestDatabase;
  let env: Record<string, string>;
  beforeAll(async () => {
    database = await createTestDatabase();
    env = { DATABASE_URL: database.url };
  });
  afterAll(() => database.drop());

  it.each<{ vars: Record<string, string>; args: string[]; base: string; source: string }>([
    { vars: { PORT: '31234' }, args: [], base: 'http://127.0.0.1:31234', source: 'from HOST and PORT' },
    {
      vars: { HOST: '0.0.0.0', PORT: '31235' },
      args: [],
      base: 'http://127.0.0.1:31235',
      source: 'from HOST and PORT',
    },
    { vars: { HOST: '::', PORT: '31236' }, args: [], base: 'http://localhost:31236', source: 'from HOST and PORT' },
    { vars: { HOST: '::1', PORT: '31237' }, args: [], base: 'http://[::1]:31237', source: 'from HOST and PORT' },
    {
      vars: { PORT: '31238', TLS_CERT_FILE: 'cert.pem', TLS_KEY_FILE: 'key.pem' },
      args: [],
      base: 'https://127.0.0.1:31238',
      source: 'from HOST and PORT',
    },
    {
      vars: { PUBLIC_URL: 'https://loyalty.example.com/shop/', HOST: '0.0.0.0', PORT: '31239' },
      args: [],
      base: 'https://loyalty.example.com/shop',
      source: 'from PUBLIC_URL',
    },
    {
      vars: { PUBLIC_URL: 'https://loyalty.example.com', PORT: '31240' },
      args: ['--base-url', 'http://127.0.0.1:4567/'],
      base: 'http://127.0.0.1:4567',
      source: 'from --base-url',
    },
    // The API address the demo prints, given back, is not doubled into /v1/v1.
    {
      vars: { PORT: '0' },
      args: ['--base-url', 'http://[::1]:4568/v1'],
      base: 'http://[::1]:4568',
      source: 'from --base-url',
    },
  ])(
    '$vars $args: $base',
    async ({ vars, args, base, source }) => {
      const json = await loyaltyInProcess(['demo', ...args, '--json'], { ...env, ...vars });
      expect(json.stderr).toBe('');
      expect(json.code).toBe(0);
      const demo = json.json();
      expect(Object.keys(demo)).toEqual(DEMO_FIELDS);
      expect(demo.base_url).toBe(`${base}/v1`);
      expect(demo.console_url).toBe(`${base}/admin`);
      expect(demo.referral_url.startsWith(`${base}/r/`), demo.referral_url).toBe(true);

      const text = await loyaltyInProcess(['demo', ...args], { ...env, ...vars });
      expect(text.code, text.stderr).toBe(0);
      const urls = curlUrls(text.stdout);
      expect(urls.length).toBeGreaterThanOrEqual(8);
      for (const url of urls) expect(url.startsWith(`${base}/v1/`), url).toBe(true);
      expect(consoleUser(text.stdout).url).toBe(`${base}/admin`);
      // It says which address it took and why, so a wrong one can be told and changed.
      expect(text.stdout).toContain(`The server is taken to be at ${base} (${source}`);
    },
    60_000,
  );
});

describe('loyalty demo: an address it cannot use', () => {
  let database: TestDatabase;
  afterEach(() => database.drop());

  it('refuses an address it cannot use, before creating anything', async () => {
    database = await createTestDatabase();
    const env = { DATABASE_URL: database.url };
    const accounts = async () => (await loyaltyInProcess(['accounts', 'list', '--json'], env)).json();
    // PORT=0: only the running server knows its port. The real process: its exit code and stderr.
    const unknown = await loyalty(['demo', '--json'], { ...env, PORT: '0' });
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stderr).error).toMatchObject({
      code: 'invalid_parameter',
      message: expect.stringContaining('--base-url'),
      details: [{ field: 'base_url', message: 'is required with PORT=0' }],
    });
    for (const bad of ['127.0.0.1:3000', 'ftp://127.0.0.1', 'http://user:pw@127.0.0.1:3000', 'http://h/?q=1', '']) {
      const refused = await loyaltyInProcess(['demo', '--base-url', bad, '--json'], env);
      expect(refused.code, bad).toBe(1);
      expect(JSON.parse(refused.stderr).error, bad).toMatchObject({
        code: 'invalid_parameter',
        details: [{ field: 'base_url' }],
      });
    }
    expect(await accounts()).toEqual([]);
  }, 90_000);
});

describe('loyalty demo against a real server', () => {
  let database: TestDatabase;
  let server: ServerProcess | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
    await database.drop();
  });

  /** Runs every printed curl line; each must succeed. */
  async function runCurls(text: string): Promise<void> {
    const lines = text.split('\n').filter((line) => line.startsWith('curl '));
    expect(lines.length).toBeGreaterThanOrEqual(8);
    for (const line of lines) {
      const { stdout } = await promisify(execFile)('sh', ['-c', `${line} -w '\\n%{http_code}'`]);
      const status = Number(stdout.slice(stdout.lastIndexOf('\n') + 1));
      expect(status, `${line}\n${stdout}`).toBeGreaterThanOrEqual(200);
      expect(status, `${line}\n${stdout}`).toBeLessThan(300);
    }
  }

  it('on another PORT, set for both: every curl line works and the console user signs in', async () => {
    database = await createTestDatabase();
    const env = { DATABASE_URL: database.url, PORT: String(await freePort()) };
    server = await startServer({ ...env, RATE_LIMIT_PER_SECOND: '0' });
    const started = server;
    expect(await eventually(async () => started.output().includes('loyalty API ready'), 10_000)).toBe(true);
    expect(server.output()).toContain(`the console at http://127.0.0.1:${env.PORT}/admin`);
    expect(server.output()).toContain(`the API reference at http://127.0.0.1:${env.PORT}/docs`);

    const text = await loyalty(['demo'], env);
    expect(text.code, text.stderr).toBe(0);
    await runCurls(text.stdout);
    const user = consoleUser(text.stdout);
    expect(user.url).toBe(`http://127.0.0.1:${env.PORT}/admin`);
    expect(await signIn(user)).toContain('Demo shop');

    // The password is shown once and kept only as a hash.
    const stored = await storedText(database.url);
    expect(stored).toContain(user.email);
    expect(stored).not.toContain(user.password);
  }, 90_000);

  it('with --base-url naming a server on PORT=0, as --json prints it', async () => {
    database = await createTestDatabase();
    const env = { DATABASE_URL: database.url };
    server = await startServer({ ...env, RATE_LIMIT_PER_SECOND: '0' });
    const json = await loyalty(['demo', '--base-url', server.url, '--json'], env);
    expect(json.code, json.stderr).toBe(0);
    const demo = json.json();
    const referral = await fetch(`${demo.base_url}/referral_settings`, {
      headers: { authorization: `Bearer ${demo.api_key}` },
    });
    expect(referral.status).toBe(200);
    const page = await signIn({ url: demo.console_url, email: demo.console_email, password: demo.console_password });
    expect(page).toContain(demo.console_email);
  }, 90_000);

  // Issue 49: the CLI printed :3000 URLs beside a server on another port.
  it("prints the running server's address in referral URLs, sign-in hints and the demo, not its own :3000", async () => {
    database = await createTestDatabase();
    const env = { DATABASE_URL: database.url };
    // PORT=0: the server takes a port of its own; the CLI is run with no PORT at all.
    server = await startServer({ ...env, PORT: '0', RATE_LIMIT_PER_SECOND: '0' });
    const base = server.url.replace(/\/$/, '');
    expect(base).not.toContain(':3000');

    const demo = await loyalty(['demo', '--json'], env);
    expect(demo.code, demo.stderr).toBe(0);
    const made = demo.json();
    expect(made.base_url).toBe(`${base}/v1`);
    expect(made.referral_url.startsWith(`${base}/r/`), made.referral_url).toBe(true);
    const text = await loyalty(['demo'], env);
    expect(text.stdout).toContain(`The server is taken to be at ${base} (as the last server started on this database`);

    const exported = await loyalty(['export', 'customers', '--account', String(made.account_id)], env);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toContain(`${base}/r/`);
    expect(exported.stdout).not.toContain(':3000');

    const user = await loyalty(
      ['users', 'create', '--new-account', 'Shop', '--email', 'owner@example.com'],
      env,
      'a long password\n',
    );
    expect(user.code, user.stderr).toBe(0);
    expect(user.stdout).toContain(`Sign in to the console at ${base}/admin`);

    // The referral URL the CLI printed is the one the server itself answers.
    const landing = await fetch(made.referral_url, { redirect: 'manual' });
    expect(landing.status).toBeLessThan(400);

    // Stopped, the server takes its address back: the CLI's own HOST and PORT again.
    await server.stop();
    server = undefined;
    const after = await loyalty(['demo', '--json'], env);
    expect(after.json().base_url).toBe('http://127.0.0.1:3000/v1');
  }, 90_000);
});

/**
 * Signs in as a browser would, from the console's address: redirected to the sign-in page,
 * the form sent with its CSRF token, then the page it lands on. Returns that page's HTML.
 */
async function signIn(user: { url: string; email: string; password: string }): Promise<string> {
  const cookies = new Map<string, string>();
  const request = async (url: string, init: RequestInit = {}) => {
    const response = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: { ...init.headers, cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
    });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair = ''] = cookie.split(';');
      const at = pair.indexOf('=');
      cookies.set(pair.slice(0, at), pair.slice(at + 1));
    }
    return response;
  };
  const origin = new URL(user.url).origin;
  const start = await request(user.url);
  expect(start.status).toBe(303);
  const signInUrl = new URL(start.headers.get('location') as string, origin);
  expect(signInUrl.pathname).toBe('/admin/sign-in');
  const form = await (await request(signInUrl.href)).text();
  const sent = await request(`${origin}/admin/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      csrf_token: hiddenField(form, 'csrf_token') ?? '',
      next: hiddenField(form, 'next') ?? '',
      email: user.email,
      password: user.password,
    }).toString(),
  });
  expect(sent.status, await sent.clone().text()).toBe(303);
  const landed = await request(new URL(sent.headers.get('location') as string, origin).href);
  const target =
    landed.status === 303 ? await request(new URL(landed.headers.get('location') as string, origin).href) : landed;
  expect(target.status).toBe(200);
  return target.text();
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
