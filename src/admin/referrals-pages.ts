import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Customer } from '../customers/schemas.js';
import { invalidParameter } from '../errors.js';
import { REFERRAL_STATUSES, type Referral, type ReferralStatus } from '../referrals/schemas.js';
import { isRunning } from '../referrals/service.js';
import type { Services } from '../services.js';
import { PageQuery } from './form-schemas.js';
import { hide, sendPage } from './pages.js';

const ReferralsListQuery = Type.Object({
  ...PageQuery.properties,
  status: Type.Optional(Type.String({ maxLength: 20 })),
  /** The sender: a customer id (the links of a customer's page) or an email (what a merchant types). */
  sender: Type.Optional(Type.String({ maxLength: 354 })),
});

const CUSTOMER_ID = /^[1-9][0-9]{0,15}$/;

/** Why a completed referral gave its sender nothing, in a merchant's words (ReferralsService.skippedReason). */
const SKIPPED: Record<string, string> = {
  sender_not_member: 'the sender was no longer a member',
};

/** A referral's reward as the list shows it: a code, or points. */
export type ShownReward =
  | { kind: 'code'; code: string; name: string }
  | { kind: 'points'; points: number | null }
  | null;

/** A referral with its rewards read, and why the sender got none (a completed referral without one). */
export interface ReferralLine {
  referral: Referral;
  receiverReward: ShownReward;
  senderReward: ShownReward;
  skipped: string | null;
}

/**
 * The referrals as the list shows them: the points of rewards given as points (read at once), and
 * for a completed referral whose sender got nothing, why.
 */
export async function referralLines(
  services: Pick<Services, 'admin' | 'referrals'>,
  accountId: number,
  referrals: readonly Referral[],
): Promise<ReferralLine[]> {
  const transactionIds = referrals.flatMap((r) =>
    [r.receiver_points_transaction_id, r.sender_points_transaction_id].filter((id): id is number => id !== null),
  );
  const points = await services.admin.pointsChanges(accountId, transactionIds);
  const reward = (fulfillment: Referral['receiver_reward_fulfillment'], transactionId: number | null): ShownReward => {
    if (fulfillment) return { kind: 'code', code: fulfillment.code, name: fulfillment.name };
    if (transactionId !== null) return { kind: 'points', points: points.get(transactionId) ?? null };
    return null;
  };
  return Promise.all(
    referrals.map(async (referral) => {
      const senderReward = reward(referral.sender_reward_fulfillment, referral.sender_points_transaction_id);
      // Rare (the sender left the program before their friend ordered): read one by one.
      const reason =
        referral.status === 'completed' && senderReward === null
          ? await services.referrals.skippedReason(accountId, referral.id)
          : null;
      return {
        referral,
        receiverReward: reward(referral.receiver_reward_fulfillment, referral.receiver_points_transaction_id),
        senderReward,
        skipped: reason === null ? null : (SKIPPED[reason] ?? reason.replaceAll('_', ' ')),
      };
    }),
  );
}

/** The referrals list: every referral of the account, newest first, by status and sender. */
const referralsPages: FastifyPluginAsyncTypebox = async (app) => {
  const { referrals, referralSettings, customers, pointsSettings } = app.services;

  /** The sender a query names (by id or by email), null when none, or 'unknown' when the account has no such customer. */
  const senderOf = async (accountId: number, given: string): Promise<Customer | null | 'unknown'> => {
    if (given === '') return null;
    if (CUSTOMER_ID.test(given) && Number(given) <= Number.MAX_SAFE_INTEGER) {
      return customers.get(accountId, Number(given)).catch((error: unknown) => {
        if ((error as { code?: string }).code === 'not_found') return 'unknown' as const;
        throw error;
      });
    }
    const found = await customers.page(accountId, { email: given, limit: 1 });
    return found.customers[0] ?? 'unknown';
  };

  app.get('/referrals', { schema: { ...hide, querystring: ReferralsListQuery } }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const status = request.query.status ?? '';
    if (status !== '' && !(REFERRAL_STATUSES as readonly string[]).includes(status)) {
      throw invalidParameter('status', `must be one of ${REFERRAL_STATUSES.join(', ')}`);
    }
    const given = (request.query.sender ?? '').trim();
    const [sender, program, labels] = await Promise.all([
      senderOf(accountId, given),
      referralSettings.program(accountId),
      pointsSettings.get(accountId),
    ]);
    const params = new URLSearchParams(Object.entries({ status, sender: given }).filter(([, value]) => value !== ''));
    const base = params.size === 0 ? '/admin/referrals' : `/admin/referrals?${params}`;
    const page =
      sender === 'unknown'
        ? { referrals: [], metadata: { previous_cursor: '', next_cursor: '' } }
        : await referrals.page(accountId, {
            ...(status === '' ? {} : { status: status as ReferralStatus }),
            ...(sender === null ? {} : { sender_customer_id: sender.id }),
            ...(request.query.cursor === undefined ? {} : { cursor: request.query.cursor }),
          });
    return sendPage(reply, request, 200, 'referrals', {
      title: 'Referrals',
      filters: { status, sender: sender !== null && sender !== 'unknown' ? sender.email : given },
      filtering: status !== '' || given !== '',
      sender: sender === 'unknown' ? null : sender,
      // The sender filter names no customer of the account: by id (a link) or by email (typed).
      unknownSender: sender !== 'unknown' ? null : CUSTOMER_ID.test(given) ? 'id' : 'email',
      lines: await referralLines(app.services, accountId, page.referrals),
      metadata: page.metadata,
      base,
      labels: labels.points_label,
      configured: program !== undefined,
      running: program !== undefined && isRunning(program),
    });
  });
};

export default referralsPages;
