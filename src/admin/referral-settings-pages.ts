import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { REFERRAL_PROGRAM_LIMITS, type ReferralProgram } from '../referral-settings/schemas.js';
import { isRunning } from '../referrals/service.js';
import { Form, type FormBody, flatten } from './form.js';
import { PageQuery } from './form-schemas.js';
import { type FormView, hide, noticeFor, post, sendPage, submitForm, typed } from './pages.js';

const REWARDS = [
  ['sender_reward', 'Referrer’s reward'],
  ['receiver_reward', 'Friend’s reward'],
] as const;

const REFERRAL_FORM: FormView = {
  view: 'referral-settings',
  title: 'Referral settings',
  root: 'referral_settings',
  fields: [
    'status',
    'qualifying_activity_token',
    'minimum_amount',
    'window_days',
    'landing_url',
    'sender_limit_per_30_days',
    ...REWARDS.flatMap(([root]) => rewardFields(root)),
  ],
  labels: {
    status: 'Status',
    qualifying_activity_token: 'Qualifying activity type',
    minimum_amount: 'Minimum amount',
    window_days: 'Days to complete',
    landing_url: 'Landing URL',
    sender_limit_per_30_days: 'Referrals per customer in 30 days',
    ...Object.fromEntries(
      REWARDS.flatMap(([root, whose]) => [
        [`${root}.name`, `${whose}: name`],
        [`${root}.image.url`, `${whose}: image URL`],
        [`${root}.image.content_type`, `${whose}: image type`],
        [`${root}.fulfillment`, `${whose}: given as`],
        [`${root}.points`, `${whose}: points`],
      ]),
    ),
  },
  pointFields: REWARDS.map(([root]) => `${root}.points`),
};

/** What the form shows for an account without a program: the service's defaults. */
const NEW_PROGRAM: FormBody = {
  status: 'active',
  'sender_reward.fulfillment': 'code',
  'receiver_reward.fulfillment': 'code',
  minimum_amount: '0',
  window_days: String(REFERRAL_PROGRAM_LIMITS.windowDays.default),
  sender_limit_per_30_days: String(REFERRAL_PROGRAM_LIMITS.senderLimit.default),
};

/** The referral program: every field of it shown, saved, deleted. */
const referralSettingsPages: FastifyPluginAsyncTypebox = async (app) => {
  const { referralSettings, activityTypes, pointsSettings } = app.services;

  /** What the page shows besides the form: the activity types to choose from, and whether the program runs. */
  const pageData = async (accountId: number, program: ReferralProgram | undefined) => ({
    activityTypes: await activityTypes.list(accountId),
    points: (await pointsSettings.get(accountId)).points_label,
    configured: program !== undefined,
    running: program !== undefined && isRunning(program),
    limits: REFERRAL_PROGRAM_LIMITS,
  });

  app.get('/referral-settings', { schema: { ...hide, querystring: PageQuery } }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const program = await referralSettings.program(accountId);
    return sendPage(reply, request, 200, REFERRAL_FORM.view, {
      title: REFERRAL_FORM.title,
      fieldLabels: REFERRAL_FORM.labels,
      values: program ? flatten(program) : NEW_PROGRAM,
      ...(await pageData(accountId, program)),
      notice: noticeFor(request.query.notice),
    });
  });

  app.post('/referral-settings', { ...typed, schema: post }, async (request, reply) => {
    const { accountId } = request.console!.user;
    return submitForm(request, reply, {
      ...REFERRAL_FORM,
      values: request.body,
      data: async () => pageData(accountId, await referralSettings.program(accountId)),
      save: async () => {
        await referralSettings.set(accountId, programInput(new Form(request.body)));
        return '/admin/referral-settings?notice=saved';
      },
    });
  });

  app.get('/referral-settings/delete', { schema: hide }, async (request, reply) => {
    await referralSettings.get(request.console!.user.accountId);
    return sendPage(reply, request, 200, 'confirm', {
      title: 'Delete the referral program?',
      message:
        'Referral URLs stop leading to your store and no referral is made or completed from now on; ' +
        'GET /v1/referral_settings answers 404 until you save settings again. ' +
        'Referrals made so far and the rewards they gave stay.',
      action: '/admin/referral-settings/delete',
      confirm: 'Delete the referral program',
      cancel: '/admin/referral-settings',
    });
  });

  app.post('/referral-settings/delete', { schema: post }, async (request, reply) => {
    await referralSettings.delete(request.console!.user.accountId);
    return reply.redirect('/admin/referral-settings?notice=deleted', 303);
  });
};

function rewardFields(root: string): string[] {
  return [`${root}.name`, `${root}.image.url`, `${root}.image.content_type`, `${root}.fulfillment`, `${root}.points`];
}

/**
 * The form as the input `referral-settings set` takes (ReferralProgramInput). An empty optional
 * field is left out, so the service's default applies; a number that is not one is passed on as
 * typed, for the service's schema to refuse at its field.
 */
function programInput(form: Form) {
  return {
    status: form.text('status'),
    sender_reward: rewardInput(form, 'sender_reward'),
    receiver_reward: rewardInput(form, 'receiver_reward'),
    qualifying_activity_token: form.optional('qualifying_activity_token') ?? null,
    // A decimal as typed (`25.50`): the service reads it exactly, as it reads an activity's amount.
    minimum_amount: form.optional('minimum_amount')?.trim(),
    window_days: form.number('window_days'),
    landing_url: form.optional('landing_url')?.trim() ?? null,
    sender_limit_per_30_days: form.number('sender_limit_per_30_days'),
  };
}

function rewardInput(form: Form, root: string) {
  const fulfillment = form.text(`${root}.fulfillment`);
  return {
    name: form.text(`${root}.name`),
    image: {
      url: form.text(`${root}.image.url`),
      content_type: form.optional(`${root}.image.content_type`) ?? null,
    },
    fulfillment,
    // Read only when the reward is points: the field is hidden for a code.
    ...(fulfillment === 'points' ? { points: form.number(`${root}.points`) } : {}),
  };
}

export default referralSettingsPages;
