import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { EVENTS_RETENTION_QUEUE } from '../events/service.js';
import { HOUSEKEEPING_QUEUE } from '../housekeeping.js';
import { POINTS_EXPIRY_QUEUE } from '../points-expiry/service.js';
import { isRunning } from '../referrals/service.js';
import { VIP_PERIODS_QUEUE } from '../vip-tiers/service.js';
import { sendPage } from './pages.js';

/** The recurring jobs' names on the overview, by key (the service's own work, for every account). */
const SCHEDULED_WORK: Record<string, string> = {
  [POINTS_EXPIRY_QUEUE]: 'Points expiry (balances idle past the points settings, and their reminders)',
  [VIP_PERIODS_QUEUE]: 'VIP periods (customers placed again as years end and points leave the 12 months)',
  [EVENTS_RETENTION_QUEUE]: 'Event retention (events and delivery logs past their keeping)',
  [HOUSEKEEPING_QUEUE]: 'Housekeeping (expired idempotency keys, sessions and codes)',
};

/** The overview: the program's figures (points, referrals, webhooks), the scheduled work, and where to go next. */
const overviewPage: FastifyPluginAsyncTypebox = async (app) => {
  const { admin, pointsSettings, webhooks, referrals, referralSettings, jobs } = app.services;
  app.get('/overview', { schema: { hide: true } }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const [figures, labels, endpoints, referral, program, scheduled] = await Promise.all([
      admin.figures(accountId),
      pointsSettings.get(accountId),
      webhooks.summary(accountId),
      referrals.figures(accountId),
      referralSettings.program(accountId),
      jobs.recurring(),
    ]);
    return sendPage(reply, request, 200, 'overview', {
      title: 'Overview',
      figures,
      labels: labels.points_label,
      endpoints,
      referral,
      referralProgram: program === undefined ? 'none' : isRunning(program) ? 'running' : 'stopped',
      scheduled: scheduled.map((job) => ({ ...job, label: SCHEDULED_WORK[job.key] ?? job.key })),
    });
  });
};

export default overviewPage;
