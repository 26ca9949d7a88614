import type { Command } from 'commander';
import type { ActivityType } from '../../activity-types/schemas.js';
import type { Customer } from '../../customers/schemas.js';
import type { StoredPointsProduct } from '../../points-products/service.js';
import type { RewardFulfillment } from '../../reward-fulfillments/schemas.js';
import { VIP_PROGRAM_TYPES } from '../../vip-tiers/periods.js';
import type { VipTier } from '../../vip-tiers/schemas.js';
import type { PlacementRun } from '../../vip-tiers/service.js';
import { lines, pageLimit, parseId, readJsonFile, run } from '../context.js';

// The points engine's commands: activity types, customer states, VIP tiers, points settings and
// points products.

const collect = (value: string, previous: string[] = []) => [...previous, value];

/**
 * What a tier change prints while it places the account's customers again, a batch at a time:
 * a progress line on stderr, unless the output is --json; call `done` once it is over.
 */
function placingProgress(cmd: Command): { progress: (run: PlacementRun) => void; done: () => void } {
  const quiet = Boolean(cmd.optsWithGlobals().json);
  let shown = false;
  return {
    progress: ({ placed, moved }) => {
      if (quiet) return;
      shown = true;
      process.stderr.write(`\rplacing customers again: ${placed} placed, ${moved} moved to another tier`);
    },
    done: () => {
      if (shown) process.stderr.write('\n');
    },
  };
}

/** Runs a tier change with `placingProgress`. */
async function placing<T>(cmd: Command, change: (progress: (run: PlacementRun) => void) => Promise<T>): Promise<T> {
  const { progress, done } = placingProgress(cmd);
  try {
    return await change(progress);
  } finally {
    done();
  }
}

/** A number option as a number when it reads as one; otherwise as given, for the schema to refuse by name. */
function numeric(value: string | undefined): number | string | undefined {
  return value !== undefined && /^-?\d{1,20}(\.\d+)?$/.test(value) ? Number(value) : value;
}

/** `activity-types create | list`. */
export function registerActivityTypeCommands(program: Command): void {
  const types = program
    .command('activity-types')
    .description("an account's activity types: what customers do, each with the token integrators send");
  types
    .command('create')
    .description('create an activity type; bind earning rules to its token with "activity_token" in their file')
    .requiredOption('--account <id>', 'the account')
    .requiredOption('--name <name>', 'what the customer does, such as "Place an order" (1 to 255 characters)')
    .action((opts: { account: string; name: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.activityTypes.create(parseId(opts.account, 'account'), { name: opts.name }),
        (type) => lines({ id: type.id, name: type.name, token: type.token }),
      ),
    );
  types
    .command('list')
    .description("list an account's activity types, oldest first")
    .requiredOption('--account <id>', 'the account')
    .action((opts: { account: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.activityTypes.list(parseId(opts.account, 'account')),
        (all: ActivityType[]) => all.map((t) => `${t.id}\t${t.token}\t${t.name}`).join('\n') || '(no activity types)',
      ),
    );
}

/** `customers set-state | show`, added to the `customers` group. */
export function registerCustomerStateCommands(customers: Command): void {
  customers
    .command('set-state')
    .description("set a customer's state: only members earn and spend points (candidate, member, disabled)")
    .argument('<id>', 'the customer id')
    .requiredOption('--state <state>', 'candidate, member or disabled')
    .action((id: string, opts: { state: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.customers.setState(parseId(id), opts.state),
        (c: Customer) => `customer ${c.id} is now ${c.state}`,
      ),
    );
  customers
    .command('show')
    .description('print a customer as the API shows it: points balance, state and VIP status')
    .argument('<id>', 'the customer id')
    .action((id: string, _opts, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.customers.show(parseId(id)),
        (c: Customer) => JSON.stringify(c, null, 2),
      ),
    );
}

interface TierOptions {
  account: string;
  name?: string;
  milestone?: string;
  imageUrl?: string;
  perk?: string[];
}

/** `vip-tiers create | list | update | delete`. */
export function registerVipTierCommands(program: Command): void {
  const tiers = program
    .command('vip-tiers')
    .description("an account's VIP tiers (all-time: by points earned); changes re-place every customer at once");
  const fields = (opts: Omit<TierOptions, 'account'>) => ({
    ...(opts.name === undefined ? {} : { name: opts.name }),
    ...(opts.milestone === undefined ? {} : { milestone: numeric(opts.milestone) }),
    ...(opts.imageUrl === undefined ? {} : { image_url: opts.imageUrl }),
    ...(opts.perk === undefined ? {} : { perks: opts.perk.map((name) => ({ name })) }),
  });
  tiers
    .command('create')
    .description(
      'create a tier: customers whose points earned reach its milestone move into it (a batch per transaction; progress on stderr without --json)',
    )
    .requiredOption('--account <id>', 'the account')
    .requiredOption('--name <name>', 'display name (1 to 255 characters)')
    .requiredOption(
      '--milestone <points>',
      "points earned (in the program's period) from which a customer is in the tier",
    )
    .option('--image-url <url>', 'image of the tier (http or https)')
    .option('--perk <text>', 'a benefit of the tier (repeat for several)', collect)
    .action((opts: TierOptions, cmd: Command) =>
      run(
        cmd,
        ({ services }) =>
          placing(cmd, (progress) =>
            services.vipTiers.create(parseId(opts.account, 'account'), fields(opts), progress),
          ),
        (tier: VipTier) => `created VIP tier ${tier.id}: ${tier.name} from ${tier.milestone} points`,
      ),
    );
  tiers
    .command('list')
    .description("list an account's tiers, ascending milestone")
    .requiredOption('--account <id>', 'the account')
    .action((opts: { account: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.vipTiers.list(parseId(opts.account, 'account')),
        (all: VipTier[]) =>
          all.map((t) => `${t.id}\t${t.milestone}\t${t.name}\t${t.perks.map((p) => p.name).join('; ')}`).join('\n') ||
          '(no VIP tiers)',
      ),
    );
  tiers
    .command('update')
    .description(
      'change a tier (the fields given); a new milestone places customers again (a batch per transaction; progress on stderr without --json)',
    )
    .argument('<id>', 'the tier id')
    .option('--name <name>', 'display name')
    .option('--milestone <points>', 'points earned from which a customer is in the tier')
    .option('--image-url <url>', 'image of the tier ("" for none)')
    .option('--perk <text>', 'a benefit (repeat for several; replaces the perks)', collect)
    .action((id: string, opts: Omit<TierOptions, 'account'>, cmd: Command) =>
      run(
        cmd,
        ({ services }) => placing(cmd, (progress) => services.vipTiers.update(parseId(id), fields(opts), progress)),
        (tier: VipTier) => `VIP tier ${tier.id} updated: ${tier.name} from ${tier.milestone} points`,
      ),
    );
  tiers
    .command('program')
    .description(
      "set the account's VIP program type and place every customer again (a batch per transaction; progress on stderr without --json)",
    )
    .requiredOption('--account <id>', 'the account')
    .requiredOption('--type <type>', `${VIP_PROGRAM_TYPES.join(', ')}`)
    .action((opts: { account: string; type: string }, cmd: Command) =>
      run(
        cmd,
        async ({ services }) => {
          const accountId = parseId(opts.account, 'account');
          const status = await services.vipTiers.setProgramType(accountId, opts.type);
          const total = status.waiting;
          const quiet = Boolean(cmd.optsWithGlobals().json);
          const placing = await services.vipTiers.placeAgain(accountId, ({ placed }) => {
            if (!quiet) process.stderr.write(`\rplacing customers again: ${Math.min(placed, total)} of ${total}`);
          });
          if (placing.placed > 0 && !quiet) process.stderr.write('\n');
          return { type: status.type, customers: status.customers, placed: placing.placed, moved: placing.moved };
        },
        (done) =>
          `VIP program: ${done.type}; ${done.placed} of ${done.customers} customers placed again, ${done.moved} moved to another tier`,
      ),
    );
  tiers
    .command('delete')
    .description(
      'delete a tier; its customers first move to the tier their points earned give them (a batch per transaction; progress on stderr without --json)',
    )
    .argument('<id>', 'the tier id')
    .action((id: string, _opts, cmd: Command) =>
      run(
        cmd,
        ({ services }) => placing(cmd, (progress) => services.vipTiers.delete(parseId(id), progress)),
        () => `VIP tier ${id} deleted`,
      ),
    );
}

/** `points-settings set | show`. */
export function registerPointsSettingsCommands(program: Command): void {
  const settings = program.command('points-settings').description('what an account calls its points');
  settings
    .command('set')
    .description(
      'name the points (shown in GET /v1/points_settings and in points products) and set when balances expire; ' +
        'what is left out stays as it was',
    )
    .requiredOption('--account <id>', 'the account')
    .option('--one <label>', 'the singular, such as Coin (1 to 64 characters); with --other')
    .option('--other <label>', 'zero or many, such as Coins (1 to 64 characters); with --one')
    .option(
      '--expiry-days <days>',
      "days without a points transaction or activity after which a member's balance expires (30 to 1825), or never",
    )
    .action((opts: { account: string; one?: string; other?: string; expiryDays?: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) =>
          services.pointsSettings.set(parseId(opts.account, 'account'), {
            ...(opts.one === undefined && opts.other === undefined
              ? {}
              : { points_label: { one: opts.one, other: opts.other } }),
            ...(opts.expiryDays === undefined
              ? {}
              : {
                  points_expiry: opts.expiryDays === 'never' ? null : { inactivity_days: numeric(opts.expiryDays) },
                }),
          }),
        (s) =>
          `points are called "${s.points_label.one}" / "${s.points_label.other}"; ` +
          (s.points_expiry === null
            ? 'balances never expire'
            : `a balance expires after ${s.points_expiry.inactivity_days} days without activity`),
      ),
    );
  settings
    .command('show')
    .description('print the points settings')
    .requiredOption('--account <id>', 'the account')
    .action((opts: { account: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.pointsSettings.get(parseId(opts.account, 'account')),
        (s) => JSON.stringify(s, null, 2),
      ),
    );
}

/** `points-products create | list | enable | disable`. */
export function registerPointsProductCommands(program: Command): void {
  const products = program
    .command('points-products')
    .description("an account's points products: rewards its customers buy with points");
  products
    .command('create')
    .description(
      'create one product (a JSON object) or many (an array), all or nothing: the API fields without ids ' +
        '(exchange_type fixed with points_price, or variable with the variable_points_* fields), reward without ' +
        'id, optional "enabled": false',
    )
    .requiredOption('--account <id>', 'the account')
    .requiredOption('--file <path>', 'the JSON file, or - for stdin')
    .action((opts: { account: string; file: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.pointsProducts.create(parseId(opts.account, 'account'), readJsonFile(opts.file)),
        (created) => {
          const all = Array.isArray(created) ? created : [created];
          return all
            .map((p) => `created points product ${p.id}: ${p.reward.name} (${p.exchange_description})`)
            .join('\n');
        },
      ),
    );
  products
    .command('list')
    .description("list an account's points products, enabled or not, newest first")
    .requiredOption('--account <id>', 'the account')
    .action((opts: { account: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.pointsProducts.listAll(parseId(opts.account, 'account')),
        (all: StoredPointsProduct[]) =>
          all
            .map((p) => `${p.id}\t${p.enabled ? 'enabled' : 'disabled'}\t${p.reward.name}\t${p.exchange_description}`)
            .join('\n') || '(no points products)',
      ),
    );
  for (const [name, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    products
      .command(name)
      .description(enabled ? 'list and sell a product again' : 'stop listing and selling a product')
      .argument('<id>', 'the product id')
      .action((id: string, _opts, cmd: Command) =>
        run(
          cmd,
          ({ services }) => services.pointsProducts.setEnabled(parseId(id), enabled),
          (p: StoredPointsProduct) => `points product ${p.id} ${enabled ? 'enabled' : 'disabled'}: ${p.reward.name}`,
        ),
      );
  }
}

/** `reward-fulfillments list | use | cancel`: what a store's staff do with a code at the till. */
export function registerRewardFulfillmentCommands(program: Command): void {
  const fulfillments = program
    .command('reward-fulfillments')
    .description("an account's issued rewards (codes): find one, mark it used, cancel it and give its points back");
  fulfillments
    .command('list')
    .description("list an account's reward fulfillments, newest first (the API's first page)")
    .requiredOption('--account <id>', 'the account')
    .option('--code <code>', 'only the one with this code (case, spaces and dashes do not matter)')
    .option('--customer <id>', "only this customer's")
    .option('--limit <n>', 'how many, 1 to 250 (default 50)')
    .action((opts: { account: string; code?: string; customer?: string; limit?: string }, cmd: Command) =>
      run(
        cmd,
        async ({ services }) =>
          (
            await services.rewardFulfillments.page(parseId(opts.account, 'account'), {
              ...(opts.code === undefined ? {} : { code: opts.code }),
              ...(opts.customer === undefined ? {} : { customer_id: parseId(opts.customer, 'customer') }),
              ...(opts.limit === undefined ? {} : { limit: pageLimit(opts.limit) }),
            })
          ).reward_fulfillments,
        (all: RewardFulfillment[]) => all.map(fulfillmentLine).join('\n') || '(no reward fulfillments)',
      ),
    );
  fulfillments
    .command('use')
    .description('mark a code used (once: a used code is refused, as a cancelled or expired one)')
    .argument('<id>', 'the reward fulfillment id')
    .requiredOption('--account <id>', 'the account it belongs to')
    .option('--used-at <time>', 'when it was used (ISO 8601); now when left out')
    .action((id: string, opts: { account: string; usedAt?: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) =>
          services.rewardFulfillments.use(
            parseId(opts.account, 'account'),
            parseId(id),
            opts.usedAt === undefined ? {} : { used_at: opts.usedAt },
          ),
        (f: RewardFulfillment) => `reward fulfillment ${f.id} used at ${f.used_at}: ${f.code} (${f.name})`,
      ),
    );
  fulfillments
    .command('cancel')
    .description('cancel an unused code and give back the points it cost (once)')
    .argument('<id>', 'the reward fulfillment id')
    .requiredOption('--account <id>', 'the account it belongs to')
    .action((id: string, opts: { account: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.rewardFulfillments.cancel(parseId(opts.account, 'account'), parseId(id)),
        (f: RewardFulfillment) => `reward fulfillment ${f.id} cancelled: ${f.code} (${f.name}); its points are back`,
      ),
    );
}

/** A fulfillment on one line of text. */
function fulfillmentLine(f: RewardFulfillment): string {
  const expires = f.expires_at === null ? 'never expires' : `expires ${f.expires_at}`;
  return `${f.id}\t${f.code}\t${f.fulfillment_status}/${f.usage_status}\tcustomer ${f.customer_id}\t${f.name}\t${expires}`;
}
