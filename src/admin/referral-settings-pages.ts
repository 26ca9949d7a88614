import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Form, flatten } from './form.js';
import { PageQuery } from './form-schemas.js';
import { type FormView, hide, noticeFor, post, sendPage, submitForm, typed } from './pages.js';

const REFERRAL_FORM: FormView = {
  view: 'referral-settings',
  title: 'Referral settings',
  root: 'referral_settings',
  fields: ['status', ...['sender_reward', 'receiver_reward'].flatMap(rewardFields)],
  labels: {
    status: 'Status',
    ...Object.fromEntries(
      [
        ['sender_reward', 'Referrer’s reward'],
        ['receiver_reward', 'Friend’s reward'],
      ].flatMap(([root, whose]) => [
        [`${root}.name`, `${whose}: name`],
        [`${root}.image.url`, `${whose}: image URL`],
        [`${root}.image.content_type`, `${whose}: image type`],
      ]),
    ),
  },
};

/** The referral program's settings: shown, saved, deleted. */
const referralSettingsPages: FastifyPluginAsyncTypebox = async (app) => {
  const { referralSettings } = app.services;

  app.get('/referral-settings', { schema: { ...hide, querystring: PageQuery } }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const settings = await referralSettings.get(accountId).catch((error: unknown) => {
      if ((error as { code?: string }).code === 'not_found') return null;
      throw error;
    });
    return sendPage(reply, request, 200, REFERRAL_FORM.view, {
      title: REFERRAL_FORM.title,
      fieldLabels: REFERRAL_FORM.labels,
      values: settings ? flatten(settings) : { status: 'active' },
      configured: settings !== null,
      notice: noticeFor(request.query.notice),
    });
  });

  app.post('/referral-settings', { ...typed, schema: post }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const form = new Form(request.body);
    return submitForm(request, reply, {
      ...REFERRAL_FORM,
      values: request.body,
      data: { configured: true },
      save: async () => {
        await referralSettings.set(accountId, {
          status: form.text('status'),
          sender_reward: rewardInput(form, 'sender_reward'),
          receiver_reward: rewardInput(form, 'receiver_reward'),
        });
        return '/admin/referral-settings?notice=saved';
      },
    });
  });

  app.get('/referral-settings/delete', { schema: hide }, async (request, reply) => {
    await referralSettings.get(request.console!.user.accountId);
    return sendPage(reply, request, 200, 'confirm', {
      title: 'Delete the referral program?',
      message: 'GET /v1/referral_settings answers 404 from now on, until you save settings again.',
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
  return [`${root}.name`, `${root}.image.url`, `${root}.image.content_type`];
}

function rewardInput(form: Form, root: string) {
  return {
    name: form.text(`${root}.name`),
    image: {
      url: form.text(`${root}.image.url`),
      content_type: form.optional(`${root}.image.content_type`) ?? null,
    },
  };
}

export default referralSettingsPages;
