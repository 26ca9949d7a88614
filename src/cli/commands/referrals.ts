import type { Command } from 'commander';
import { invalidParameter } from '../../errors.js';
import { MAX_LIMIT } from '../../pagination/schemas.js';
import { REFERRAL_STATUSES, type Referral, type ReferralStatus } from '../../referrals/schemas.js';
import type { Services } from '../../services.js';
import { parseId, run } from '../context.js';

/** `loyalty referrals list`: the account's referrals, newest first; `--json` prints the API's referral objects. */
export function registerReferralCommands(program: Command): void {
  const referrals = program
    .command('referrals')
    .description("an account's referrals: friends referred with a member's referral URL, and the rewards of both");
  referrals
    .command('list')
    .description("list an account's referrals, newest first (--json: an array of the API's referral objects)")
    .requiredOption('--account <id>', 'the account')
    .option('--status <status>', `only the referrals with this status: ${REFERRAL_STATUSES.join(', ')}`)
    .action((opts: { account: string; status?: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) => everyReferral(services, parseId(opts.account, 'account'), parseStatus(opts.status)),
        (all) => all.map(referralLine).join('\n') || '(no referrals)',
      ),
    );
}

function parseStatus(status: string | undefined): ReferralStatus | undefined {
  if (status === undefined) return undefined;
  if (!(REFERRAL_STATUSES as readonly string[]).includes(status)) {
    throw invalidParameter('status', `must be one of ${REFERRAL_STATUSES.join(', ')}`);
  }
  return status as ReferralStatus;
}

/** Every referral of the account with the status, page after page. */
async function everyReferral(services: Services, accountId: number, status?: ReferralStatus): Promise<Referral[]> {
  await services.accounts.require(accountId);
  const all: Referral[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await services.referrals.page(accountId, {
      limit: MAX_LIMIT,
      ...(status === undefined ? {} : { status }),
      ...(cursor === undefined ? {} : { cursor }),
    });
    all.push(...page.referrals);
    if (page.metadata.next_cursor === '') return all;
    cursor = page.metadata.next_cursor;
  }
}

/** One line of the text listing: id, status, sender, friend, and the rewards issued. */
function referralLine(r: Referral): string {
  const reward = (code: { code: string } | null, points: number | null) =>
    code ? code.code : points !== null ? `points transaction ${points}` : '-';
  return [
    `#${r.id}`,
    r.status.padEnd(9),
    `sender ${r.sender_customer.email} (customer ${r.sender_customer.id})`,
    `friend ${r.receiver_customer_email}`,
    `friend's reward ${reward(r.receiver_reward_fulfillment, r.receiver_points_transaction_id)}`,
    `sender's reward ${reward(r.sender_reward_fulfillment, r.sender_points_transaction_id)}`,
    `created ${r.created_at}`,
  ].join('  ');
}
