import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { EVENTS_RETENTION_QUEUE } from '../events/service.js';
import { HOUSEKEEPING_QUEUE } from '../housekeeping.js';
import { POINTS_EXPIRY_QUEUE } from '../points-expiry/service.js';
import { isRunning } from '../referrals/service.js';
import { VIP_PERIODS_QUEUE } from '../vip-tiers/service.js';
import { sendPage } from './pages.js';
import type { SetupProgress } from './repository.js';

/** The recurring jobs' names on the overview, by key (the service's own work, for every account). */
const SCHEDULED_WORK: Record<string, string> = {
  [POINTS_EXPIRY_QUEUE]: 'Points expiry (balances idle past the points settings, and their reminders)',
  [VIP_PERIODS_QUEUE]: 'VIP periods (customers placed again as years end and points leave the 12 months)',
  [EVENTS_RETENTION_QUEUE]: 'Event retention (events and delivery logs past their keeping)',
  [HOUSEKEEPING_QUEUE]: 'Housekeeping (expired idempotency keys, sessions and codes)',
};

/** One step of the setup checklist: done or not, with its link and words (HTML, written here: no merchant text). */
interface SetupStep {
  done: boolean;
  html: string;
}

/** The checklist, each step ticked from what the account has (so it follows the merchant's progress). */
function setupSteps(setup: SetupProgress, referralsRunning: boolean): { steps: SetupStep[]; left: number } {
  const steps: SetupStep[] = [
    { done: setup.pointsNamed, html: '<a href="/admin/points-settings">Name your points</a> (Points, Coins, Stars…).' },
    {
      done: setup.activityType,
      html: '<a href="/admin/activity-types">Create an activity type</a> for what customers do, such as placing an order.',
    },
    {
      done: setup.creditingRule,
      html: '<a href="/admin/earning-rules/new">Create an earning rule</a> bound to it, enabled: how many points it earns.',
    },
    {
      done: setup.vipTier && setup.reward,
      html: '<a href="/admin/vip-tiers">Add VIP tiers</a> and <a href="/admin/points-products/new">rewards to spend points on</a>.',
    },
    {
      done: referralsRunning,
      html: '<a href="/admin/referral-settings">Start the referral program</a>: the rewards, the order that completes a referral, where referral URLs lead.',
    },
    {
      done: setup.apiAccess,
      html: '<a href="/admin/api-keys">Create an API key</a> (or <a href="/admin/apps">connect an app</a>) for your store to report activities.',
    },
  ];
  return { steps, left: steps.filter((step) => !step.done).length };
}

/** The overview: where to go next, the program's figures (points, referrals, webhooks), and the server's scheduled work. */
const overviewPage: FastifyPluginAsyncTypebox = async (app) => {
  const { admin, pointsSettings, webhooks, referrals, referralSettings, jobs } = app.services;
  app.get('/overview', { schema: { hide: true } }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const [figures, setup, labels, endpoints, referral, program, scheduled] = await Promise.all([
      admin.figures(accountId),
      admin.setupProgress(accountId),
      pointsSettings.get(accountId),
      webhooks.summary(accountId),
      referrals.figures(accountId),
      referralSettings.program(accountId),
      jobs.recurring(),
    ]);
    const referralProgram = program === undefined ? 'none' : isRunning(program) ? 'running' : 'stopped';
    return sendPage(reply, request, 200, 'overview', {
      title: 'Overview',
      figures,
      setup: setupSteps(setup, referralProgram === 'running'),
      labels: labels.points_label,
      endpoints,
      referral,
      referralProgram,
      scheduled: scheduled.map((job) => ({ ...job, label: SCHEDULED_WORK[job.key] ?? job.key })),
    });
  });
};

export default overviewPage;
