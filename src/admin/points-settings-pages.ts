import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Form, flatten } from './form.js';
import { PageQuery } from './form-schemas.js';
import { type FormView, hide, noticeFor, post, sendPage, submitForm, typed } from './pages.js';

const POINTS_SETTINGS_FORM: FormView = {
  view: 'points-settings',
  title: 'Points settings',
  root: 'points_settings',
  fields: ['points_label.one', 'points_label.other', 'points_expiry.inactivity_days'],
  labels: {
    'points_label.one': 'One point is called',
    'points_label.other': 'Several points are called',
    'points_expiry.inactivity_days': 'Balances expire after (days without activity)',
  },
};

/** Points settings: what the account calls its points. */
const pointsSettingsPages: FastifyPluginAsyncTypebox = async (app) => {
  const { pointsSettings } = app.services;

  app.get('/points-settings', { schema: { ...hide, querystring: PageQuery } }, async (request, reply) => {
    const settings = await pointsSettings.get(request.console!.user.accountId);
    return sendPage(reply, request, 200, POINTS_SETTINGS_FORM.view, {
      title: POINTS_SETTINGS_FORM.title,
      fieldLabels: POINTS_SETTINGS_FORM.labels,
      values: flatten({ points_label: settings.points_label, points_expiry: settings.points_expiry ?? {} }),
      notice: noticeFor(request.query.notice),
    });
  });

  app.post('/points-settings', { ...typed, schema: post }, async (request, reply) => {
    const form = new Form(request.body);
    return submitForm(request, reply, {
      ...POINTS_SETTINGS_FORM,
      values: request.body,
      save: async () => {
        const days = form.optional('points_expiry.inactivity_days')?.trim() ?? '';
        await pointsSettings.set(request.console!.user.accountId, {
          points_label: { one: form.text('points_label.one'), other: form.text('points_label.other') },
          points_expiry: days === '' ? null : { inactivity_days: form.number('points_expiry.inactivity_days') },
        });
        return '/admin/points-settings?notice=saved';
      },
    });
  });
};

export default pointsSettingsPages;
