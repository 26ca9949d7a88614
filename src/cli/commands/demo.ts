import type { Command } from 'commander';
import { ALL_SCOPES } from '../../auth/scopes.js';
import { randomBase62 } from '../../auth/secrets.js';
import { CREATE_OR_UPDATE_EXAMPLE } from '../../customer-identities/schemas.js';
import { DomainError } from '../../errors.js';
import { run, type ServerAddress, serverAddress } from '../context.js';

export interface DemoResult {
  account_id: number;
  api_key: string;
  access_token: string;
  /** The API's address, `/v1` included: from --base-url, else PUBLIC_URL, else the running server's, else HOST and PORT. */
  base_url: string;
  /** The token of the demo's "Place an order" activity type. */
  activity_token: string;
  /** The demo's customer, jane@example.com, whom the printed lines earn and spend for. */
  customer_id: number;
  /** The demo's "$5 off" points product (100 points). */
  points_product_id: number;
  /** Jane's referral URL: a friend who follows it lands on the demo store with her code. */
  referral_url: string;
  /** Where the demo's console user signs in: the server's `/admin`. */
  console_url: string;
  /** The demo's console user, a merchant user of the demo account. */
  console_email: string;
  /** Its generated password, shown only now (stored as an scrypt hash). */
  console_password: string;
}

const POINTS_PRODUCTS = [
  {
    exchange_type: 'fixed',
    points_price: 100,
    reward: {
      name: '$5 off coupon',
      description: '$5 off your next order',
      image_url: 'https://cdn.example.com/rewards/5-off.png',
    },
  },
  {
    exchange_type: 'variable',
    variable_points_step: 100,
    variable_points_step_reward_value: 1,
    variable_points_min: 100,
    variable_points_max: 1000,
    reward: { name: '$1 off per 100 points', image_url: 'https://cdn.example.com/rewards/dollar-off.png' },
  },
];

/** The demo's order activity: 125.50 spent earns 125 points under "Place an order" (1 point per 1). */
export const demoActivity = (token: string) => ({
  activity: {
    token,
    customer_email: 'jane@example.com',
    distinct_id: 'order-1001',
    properties: { amount: '125.50' },
  },
});

const VIP_TIERS = [
  { name: 'Silver', milestone: 100, perks: [{ name: 'Free shipping' }] },
  { name: 'Gold', milestone: 500, perks: [{ name: 'Free shipping' }, { name: 'Early access to sales' }] },
];

/** The demo's referral program: a code for each side; a first order of 20 or more completes it. */
const referralProgram = (orderToken: string) => ({
  status: 'active',
  qualifying_activity_token: orderToken,
  minimum_amount: '20',
  window_days: 30,
  landing_url: 'https://shop.example.com/',
  sender_limit_per_30_days: 50,
  sender_reward: {
    name: '$5 off coupon',
    image: { url: 'https://cdn.example.com/rewards/5-off.png', content_type: 'image/png' },
  },
  receiver_reward: {
    name: '10% off your first order',
    image: { url: 'https://cdn.example.com/rewards/10-percent.png', content_type: 'image/png' },
  },
});

/** The friend's first order, which completes Jane's referral (40.00: above the program's minimum of 20). */
export const friendOrder = (token: string) => ({
  activity: {
    token,
    customer_email: 'sam@example.com',
    distinct_id: 'order-2001',
    properties: { amount: '40.00' },
  },
});

const EARNING_RULES = [
  {
    name: 'Place an order',
    image_url: 'https://cdn.example.com/earning/order-online.svg',
    reward: { type: 'points' },
    reward_value: { type: 'variable', variable: { value: 1, per_amount: 1 } },
    earning_limit: null,
  },
  {
    name: 'Create an account',
    image_url: 'https://cdn.example.com/earning/signup.svg',
    reward: { type: 'points' },
    reward_value: { type: 'fixed', fixed: { value: 100 } },
    earning_limit: { max: 1, type: 'lifetime' },
  },
  {
    name: 'Celebrate a birthday',
    image_url: 'https://cdn.example.com/earning/birthday.svg',
    reward: { type: 'points' },
    reward_value: { type: 'fixed', fixed: { value: 250 } },
    earning_limit: { max: 1, type: 'rolling', rolling: { unit: 'year', unit_count: 1 } },
  },
  {
    name: 'Follow on Instagram',
    image_url: 'https://cdn.example.com/earning/instagram.svg',
    action_text: 'Follow us',
    action_url: 'https://instagram.com/example',
    reward: { type: 'points' },
    reward_value: { type: 'fixed', fixed: { value: 50 } },
    earning_limit: { max: 1, type: 'lifetime' },
  },
  {
    name: 'Write a product review',
    image_url: 'https://cdn.example.com/earning/review.svg',
    reward: { type: 'points' },
    reward_value: { type: 'fixed', fixed: { value: 25 } },
    earning_limit: { max: 3, type: 'rolling', rolling: { unit: 'month', unit_count: 1 } },
  },
];

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description(
      'create a demo program (rules, tiers, rewards, a customer) with a console user, an API key and an app token; ' +
        'prints them with curl lines for the server at --base-url, else PUBLIC_URL, else the address the last ' +
        'server started on the database recorded, else HOST and PORT (default http://127.0.0.1:3000)',
    )
    .option('--base-url <url>', "the server's address, as clients reach it (such as http://127.0.0.1:3001)")
    .action((opts: { baseUrl?: string }, cmd: Command) => {
      let address: ServerAddress | undefined;
      return run(
        cmd,
        async (ctx): Promise<DemoResult> => {
          const { services } = ctx;
          // Checked before anything is created: curl lines to the wrong address all fail.
          const found = serverAddress(ctx, opts.baseUrl);
          if (found === null) {
            throw new DomainError(
              'invalid_parameter',
              'PORT=0 lets the server choose its port, so the demo cannot know it: give --base-url with the address ' +
                'the server printed when it started',
              [{ field: 'base_url', message: 'is required with PORT=0' }],
            );
          }
          address = found;
          const account = await services.accounts.create('Demo shop');
          const order = await services.activityTypes.create(account.id, { name: 'Place an order' });
          await services.referralSettings.set(account.id, referralProgram(order.token));
          const review = await services.activityTypes.create(account.id, { name: 'Write a product review' });
          const tokens: Record<string, string> = {
            'Place an order': order.token,
            'Write a product review': review.token,
          };
          await services.earningRules.create(
            account.id,
            EARNING_RULES.map((rule) => ({
              ...rule,
              ...(tokens[rule.name] ? { activity_token: tokens[rule.name] } : {}),
            })),
          );
          for (const tier of VIP_TIERS) await services.vipTiers.create(account.id, tier);
          const [coupon] = (await services.pointsProducts.create(account.id, POINTS_PRODUCTS)) as { id: number }[];
          const jane = await services.customers.create(account.id, {
            email: 'jane@example.com',
            first_name: 'Jane',
            last_name: 'Doe',
          });
          const { referral_url: referralUrl } = await services.customers.get(account.id, jane.id);
          const key = await services.auth.createApiKey(account.id, ALL_SCOPES);
          const app = await services.apps.create({
            name: 'Demo app',
            redirectUris: ['http://localhost:8080/callback'],
          });
          const token = await services.auth.issueAccessToken({
            accountId: account.id,
            clientId: app.client_id,
            ttlSeconds: 86_400,
          });
          // A user for the console, so that a newcomer sees it without a second command. The
          // account id keeps the email unique when the demo runs again on the same database.
          const password = randomBase62(20);
          const user = await services.users.create(account.id, {
            email: `demo-${account.id}@example.com`,
            password,
          });
          return {
            account_id: account.id,
            api_key: key.key,
            access_token: token.access_token,
            base_url: `${found.url}/v1`,
            activity_token: order.token,
            customer_id: jane.id,
            points_product_id: coupon!.id,
            // Her code on the address the demo prints (--base-url may differ from the configured one).
            referral_url: `${found.url}/r/${referralUrl!.split('/').pop()}`,
            console_url: `${found.url}/admin`,
            console_email: user.email,
            console_password: password,
          };
        },
        (demo) => demoText(demo, address as ServerAddress),
      );
    });
}

/** Where the printed address came from, and how to change it when the server is elsewhere. */
const SOURCES: Record<ServerAddress['source'], string> = {
  '--base-url': 'from --base-url',
  PUBLIC_URL: 'from PUBLIC_URL; if the server is elsewhere, run the demo with --base-url URL',
  'the running server':
    'as the last server started on this database recorded it; if it listens elsewhere now, run the demo with ' +
    '--base-url URL',
  'HOST and PORT':
    "from HOST and PORT, read as the server reads them; if it listens elsewhere, run the demo with the server's " +
    'PORT, or with --base-url URL',
};

/** The demo's referral: Sam, referred with the code at the end of Jane's referral URL. */
const referralBody = (url: string) => ({
  referral: {
    referral_code: url.split('/').pop(),
    receiver_customer_email: 'sam@example.com',
    receiver_first_name: 'Sam',
  },
});

function demoText(demo: DemoResult, address: ServerAddress): string {
  const identity = JSON.stringify(CREATE_OR_UPDATE_EXAMPLE);
  return [
    `Demo account ${demo.account_id} is ready.`,
    '',
    `  Console:                ${demo.console_url}`,
    `    email:                ${demo.console_email}`,
    `    password:             ${demo.console_password}`,
    `  API key (merchant):     ${demo.api_key}`,
    `  Access token (app):     ${demo.access_token}   (valid 24 hours)`,
    '',
    'These secrets are shown only now.',
    `The server is taken to be at ${address.url} (${SOURCES[address.source]}).`,
    `With it running (npm start), sign in to the console at ${demo.console_url}, or try:`,
    '',
    `curl -s ${demo.base_url}/referral_settings -H 'Authorization: Bearer ${demo.api_key}'`,
    '',
    `curl -s '${demo.base_url}/earning_rules?limit=2' -H 'Authorization: Bearer ${demo.api_key}'`,
    '',
    `curl -s -X POST ${demo.base_url}/customer_identities/create_or_update -H 'Authorization: Bearer ${demo.access_token}' -H 'Content-Type: application/json' -d '${identity}'`,
    '',
    'Record an order of 125.50 by jane@example.com (125 points; a second send answers 200 and credits nothing):',
    '',
    `curl -s -X POST ${demo.base_url}/activities -H 'Authorization: Bearer ${demo.api_key}' -H 'Content-Type: application/json' -d '${JSON.stringify(demoActivity(demo.activity_token))}'`,
    '',
    'Then her balance and VIP tier, and her ledger:',
    '',
    `curl -s ${demo.base_url}/customers/${demo.customer_id} -H 'Authorization: Bearer ${demo.api_key}'`,
    '',
    `curl -s '${demo.base_url}/points_transactions?customer_id=${demo.customer_id}' -H 'Authorization: Bearer ${demo.api_key}'`,
    '',
    'To be told of her purchase by a webhook (docs/webhooks.md), run the server with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true',
    '(a receiver on this machine is a private address), make an endpoint, and start a receiver with the secret it prints:',
    '',
    `WEBHOOK_ALLOW_PRIVATE_NETWORKS=true npx loyalty webhooks create --account ${demo.account_id} --url http://127.0.0.1:4000/hooks --events points_purchase.created`,
    'npx loyalty webhooks listen --secret whsec_… --port 4000',
    '',
    'Spend 100 of her points on the "$5 off coupon" (201 with a reward code; her balance drops by 100):',
    '',
    `curl -s -X POST ${demo.base_url}/points_products/${demo.points_product_id}/purchase -H 'Authorization: Bearer ${demo.api_key}' -H 'Content-Type: application/json' -H 'Idempotency-Key: demo-purchase-1' -d '{"customer_id":${demo.customer_id}}'`,
    '',
    'And the rewards issued to her, with their codes:',
    '',
    `curl -s '${demo.base_url}/reward_fulfillments?customer_id=${demo.customer_id}' -H 'Authorization: Bearer ${demo.api_key}'`,
    '',
    `Jane's referral URL is ${demo.referral_url}: it counts a click and sends a friend to the store with her code.`,
    'Her friend Sam gives his email: the referral is made and Sam gets his reward at once (201, with his reward code):',
    '',
    `curl -s -X POST ${demo.base_url}/referrals -H 'Authorization: Bearer ${demo.api_key}' -H 'Content-Type: application/json' -H 'Idempotency-Key: demo-referral-1' -d '${JSON.stringify(referralBody(demo.referral_url))}'`,
    '',
    "Sam's first order, of 40.00, completes the referral (and earns him his own points):",
    '',
    `curl -s -X POST ${demo.base_url}/activities -H 'Authorization: Bearer ${demo.api_key}' -H 'Content-Type: application/json' -d '${JSON.stringify(friendOrder(demo.activity_token))}'`,
    '',
    "And Jane's referrals: completed, with her reward code in sender_reward_fulfillment:",
    '',
    `curl -s '${demo.base_url}/referrals?sender_customer_id=${demo.customer_id}' -H 'Authorization: Bearer ${demo.api_key}'`,
  ].join('\n');
}
