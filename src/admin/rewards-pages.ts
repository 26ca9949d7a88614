import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { invalidParameter } from '../errors.js';
import type { RewardFulfillment } from '../reward-fulfillments/schemas.js';
import { PageQuery } from './form-schemas.js';
import { hide, noticeFor, postWithId, sendPage, withId } from './pages.js';

/** What the status filter offers: a usage, or cancelled codes. */
const STATUSES = ['unused', 'used', 'expired', 'cancelled'] as const;
type Status = (typeof STATUSES)[number];

const RewardsQuery = Type.Object({
  ...PageQuery.properties,
  code: Type.Optional(Type.String({ maxLength: 100 })),
  status: Type.Optional(Type.String({ maxLength: 20 })),
});

/** Whether staff can still act on the code: issued, unused, not expired. */
const open = (f: RewardFulfillment) => f.fulfillment_status === 'issued' && f.usage_status === 'unused';

/**
 * Rewards issued (codes): find the one a customer shows at the till, mark it used, or cancel it
 * (after a confirmation) and give its points back. The API's rules, through its service.
 */
const rewardsPages: FastifyPluginAsyncTypebox = async (app) => {
  const { rewardFulfillments, customers } = app.services;

  app.get('/rewards', { schema: { ...hide, querystring: RewardsQuery } }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const code = (request.query.code ?? '').trim();
    const status = request.query.status ?? '';
    if (status !== '' && !(STATUSES as readonly string[]).includes(status)) {
      throw invalidParameter('status', `must be one of ${STATUSES.join(', ')}`);
    }
    const chosen = status as Status | '';
    const page = await rewardFulfillments.page(accountId, {
      ...(code === '' ? {} : { code }),
      ...(chosen === 'cancelled' ? { fulfillment_status: 'cancelled' as const } : {}),
      ...(chosen !== '' && chosen !== 'cancelled' ? { usage_status: chosen } : {}),
      ...(request.query.cursor === undefined ? {} : { cursor: request.query.cursor }),
    });
    const owners = await customers.shownByIds(
      accountId,
      page.reward_fulfillments.map((f) => f.customer_id),
    );
    const params = new URLSearchParams(Object.entries({ code, status }).filter(([, value]) => value !== ''));
    return sendPage(reply, request, 200, 'rewards', {
      title: 'Rewards',
      filters: { code, status },
      filtering: code !== '' || status !== '',
      lines: page.reward_fulfillments.map((fulfillment) => ({
        fulfillment,
        email: owners.get(fulfillment.customer_id)?.email ?? null,
        open: open(fulfillment),
      })),
      metadata: page.metadata,
      base: params.size === 0 ? '/admin/rewards' : `/admin/rewards?${params}`,
      notice: noticeFor(request.query.notice),
    });
  });

  app.post('/rewards/:id/use', { schema: postWithId }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const used = await rewardFulfillments.use(accountId, request.params.id);
    return reply.redirect(`/admin/rewards?code=${used.code}&notice=used`, 303);
  });

  app.get('/rewards/:id/cancel', { schema: withId }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const fulfillment = await rewardFulfillments.get(accountId, request.params.id);
    const back = `/admin/rewards?code=${fulfillment.code}`;
    if (!open(fulfillment)) {
      return sendPage(reply, request, 200, 'confirm', {
        title: `The code ${fulfillment.code} cannot be cancelled`,
        message: `It is ${fulfillment.fulfillment_status === 'cancelled' ? 'cancelled already' : fulfillment.usage_status}: only an issued, unused code can be cancelled.`,
        cancel: back,
      });
    }
    return sendPage(reply, request, 200, 'confirm', {
      title: `Cancel the code ${fulfillment.code}?`,
      message:
        `${fulfillment.name}: the code stops working, and the points the customer spent on it are given back ` +
        '(a points transaction described "Refund"). This cannot be undone.',
      action: `/admin/rewards/${fulfillment.id}/cancel`,
      confirm: 'Cancel the code and refund',
      cancel: back,
    });
  });

  app.post('/rewards/:id/cancel', { schema: postWithId }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const cancelled = await rewardFulfillments.cancel(accountId, request.params.id);
    return reply.redirect(`/admin/rewards?code=${cancelled.code}&notice=cancelled`, 303);
  });
};

export default rewardsPages;
