import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Form } from './form.js';
import { PageQuery } from './form-schemas.js';
import { type FormView, hide, noticeFor, post, sendPage, submitForm, typed } from './pages.js';

const ACTIVITY_TYPE_FORM: FormView = {
  view: 'activity-types',
  title: 'Activity types',
  root: 'activity_type',
  fields: ['name'],
  labels: { name: 'Name' },
};

/** Activity types: listed and created on one page. */
const activityTypesPages: FastifyPluginAsyncTypebox = async (app) => {
  const { activityTypes } = app.services;

  const activityTypesData = async (accountId: number) => ({ types: await activityTypes.list(accountId) });

  app.get('/activity-types', { schema: { ...hide, querystring: PageQuery } }, async (request, reply) => {
    return sendPage(reply, request, 200, ACTIVITY_TYPE_FORM.view, {
      title: ACTIVITY_TYPE_FORM.title,
      fieldLabels: ACTIVITY_TYPE_FORM.labels,
      ...(await activityTypesData(request.console!.user.accountId)),
      values: {},
      notice: noticeFor(request.query.notice),
    });
  });

  app.post('/activity-types', { ...typed, schema: post }, async (request, reply) => {
    const { accountId } = request.console!.user;
    return submitForm(request, reply, {
      ...ACTIVITY_TYPE_FORM,
      values: request.body,
      data: () => activityTypesData(accountId),
      save: async () => {
        await activityTypes.create(accountId, { name: new Form(request.body).text('name') });
        return '/admin/activity-types?notice=created';
      },
    });
  });
};

export default activityTypesPages;
