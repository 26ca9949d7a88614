import type { Command } from 'commander';
import { ALL_SCOPES } from '../../auth/scopes.js';
import type { Config } from '../../config.js';
import { CREATE_OR_UPDATE_EXAMPLE } from '../../customer-identities/schemas.js';
import { run } from '../context.js';

export interface DemoResult {
  account_id: number;
  api_key: string;
  access_token: string;
  base_url: string;
  /** The token of the demo's "Place an order" activity type. */
  activity_token: string;
  /** The demo's customer, jane@example.com, whom the printed lines earn and spend for. */
  customer_id: number;
  /** The demo's "$5 off" points product (100 points). */
  points_product_id: number;
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

const REFERRAL_SETTINGS = {
  status: 'active',
  sender_reward: {
    name: '$5 off coupon',
    image: { url: 'https://cdn.example.com/rewards/5-off.png', content_type: 'image/png' },
  },
  receiver_reward: {
    name: '10% off your first order',
    image: { url: 'https://cdn.example.com/rewards/10-percent.png', content_type: 'image/png' },
  },
};

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

/** Where the server started with the same environment would answer. */
export function baseUrl(config: Config): string {
  const host = ['0.0.0.0', '::', ''].includes(config.host) ? '127.0.0.1' : config.host;
  const shown = host.includes(':') ? `[${host}]` : host;
  return `${config.tls ? 'https' : 'http'}://${shown}:${config.port}`;
}

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description(
      'create a demo account with referral settings, earning rules bound to an order activity type, VIP tiers, ' +
        'points products, a customer, an API key and an app token',
    )
    .action((_opts, cmd: Command) =>
      run(
        cmd,
        async ({ services, config }): Promise<DemoResult> => {
          const account = await services.accounts.create('Demo shop');
          await services.referralSettings.set(account.id, REFERRAL_SETTINGS);
          const order = await services.activityTypes.create(account.id, { name: 'Place an order' });
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
          const key = await services.credentials.createApiKey(account.id, ALL_SCOPES);
          const app = await services.apps.create({
            name: 'Demo app',
            redirectUris: ['http://localhost:8080/callback'],
          });
          const token = await services.credentials.issueAccessToken({
            accountId: account.id,
            clientId: app.client_id,
            ttlSeconds: 86_400,
          });
          return {
            account_id: account.id,
            api_key: key.key,
            access_token: token.access_token,
            base_url: `${baseUrl(config)}/v1`,
            activity_token: order.token,
            customer_id: jane.id,
            points_product_id: coupon!.id,
          };
        },
        demoText,
      ),
    );
}

function demoText(demo: DemoResult): string {
  const identity = JSON.stringify(CREATE_OR_UPDATE_EXAMPLE);
  return [
    `Demo account ${demo.account_id} is ready.`,
    '',
    `  API key (merchant):     ${demo.api_key}`,
    `  Access token (app):     ${demo.access_token}   (valid 24 hours)`,
    '',
    'These secrets are shown only now. With the server running (npm start), try:',
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
    'Spend 100 of her points on the "$5 off coupon" (201 with a reward code; her balance drops by 100):',
    '',
    `curl -s -X POST ${demo.base_url}/points_products/${demo.points_product_id}/purchase -H 'Authorization: Bearer ${demo.api_key}' -H 'Content-Type: application/json' -H 'Idempotency-Key: demo-purchase-1' -d '{"customer_id":${demo.customer_id}}'`,
    '',
    'And the rewards issued to her, with their codes:',
    '',
    `curl -s '${demo.base_url}/reward_fulfillments?customer_id=${demo.customer_id}' -H 'Authorization: Bearer ${demo.api_key}'`,
  ].join('\n');
}
