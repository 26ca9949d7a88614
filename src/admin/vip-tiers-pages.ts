import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Form, flatten } from './form.js';
import { PageQuery } from './form-schemas.js';
import {
  type FormView,
  hide,
  noticeFor,
  owned,
  post,
  postWithId,
  sendPage,
  submitForm,
  typed,
  withId,
} from './pages.js';

const TIER_FIELDS = ['name', 'milestone', 'image_url', 'perks'];
const TIERS_FORM: FormView = {
  view: 'vip-tiers',
  title: 'VIP tiers',
  root: 'vip_tier',
  fields: TIER_FIELDS,
  labels: { name: 'Name', milestone: 'Milestone', image_url: 'Image URL', perks: 'Perks' },
  pointFields: ['milestone'],
};

/** The program's type, on the tiers' page. */
const PROGRAM_FORM: FormView = {
  view: 'vip-tiers',
  title: 'VIP tiers',
  root: 'vip_program',
  fields: ['type'],
  labels: { type: 'Program type' },
};

/** VIP tiers: listed and created on one page, each edited or deleted on its own. */
const vipTiersPages: FastifyPluginAsyncTypebox = async (app) => {
  const { vipTiers } = app.services;

  const ownTier = (accountId: number, id: number) => owned(vipTiers.list(accountId), id, 'VIP tier');

  app.get('/vip-tiers', { schema: { ...hide, querystring: PageQuery } }, async (request, reply) => {
    return sendPage(reply, request, 200, TIERS_FORM.view, {
      title: TIERS_FORM.title,
      fieldLabels: TIERS_FORM.labels,
      tiers: await vipTiers.list(request.console!.user.accountId),
      program: await vipTiers.programStatus(request.console!.user.accountId),
      values: {},
      notice: noticeFor(request.query.notice),
    });
  });

  app.post('/vip-tiers/program', { ...typed, schema: post }, async (request, reply) => {
    const { accountId } = request.console!.user;
    return submitForm(request, reply, {
      ...PROGRAM_FORM,
      values: request.body,
      data: async () => ({
        tiers: await vipTiers.list(accountId),
        program: await vipTiers.programStatus(accountId),
        failedForm: 'program',
      }),
      save: async () => {
        await vipTiers.setProgramType(accountId, new Form(request.body).text('type'));
        return '/admin/vip-tiers?notice=placing';
      },
    });
  });

  app.post('/vip-tiers', { ...typed, schema: post }, async (request, reply) => {
    const { accountId } = request.console!.user;
    return submitForm(request, reply, {
      ...TIERS_FORM,
      values: request.body,
      data: async () => ({ tiers: await vipTiers.list(accountId), program: await vipTiers.programStatus(accountId) }),
      save: async () => {
        await vipTiers.create(accountId, tierInput(new Form(request.body)));
        return '/admin/vip-tiers?notice=created';
      },
    });
  });

  app.get('/vip-tiers/:id', { schema: withId }, async (request, reply) => {
    const tier = await ownTier(request.console!.user.accountId, request.params.id);
    return sendPage(reply, request, 200, 'vip-tier', {
      title: `Edit ${tier.name}`,
      fieldLabels: TIERS_FORM.labels,
      tier,
      values: {
        ...flatten({ name: tier.name, milestone: tier.milestone, image_url: tier.image_url }),
        perks: perksText(tier),
      },
    });
  });

  app.post('/vip-tiers/:id', { ...typed, schema: postWithId }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const tier = await ownTier(accountId, request.params.id);
    return submitForm(request, reply, {
      ...TIERS_FORM,
      view: 'vip-tier',
      title: `Edit ${tier.name}`,
      values: request.body,
      data: { tier },
      save: async () => {
        await vipTiers.update(tier.id, tierInput(new Form(request.body)));
        return '/admin/vip-tiers?notice=saved';
      },
    });
  });

  app.get('/vip-tiers/:id/delete', { schema: withId }, async (request, reply) => {
    const tier = await ownTier(request.console!.user.accountId, request.params.id);
    return sendPage(reply, request, 200, 'confirm', {
      title: `Delete the VIP tier ${tier.name}?`,
      message:
        'Its customers move at once to the tier their points earned give them. Rules restricted to it keep ' +
        'its id and no longer match anyone.',
      action: `/admin/vip-tiers/${tier.id}/delete`,
      confirm: 'Delete the tier',
      cancel: '/admin/vip-tiers',
    });
  });

  app.post('/vip-tiers/:id/delete', { schema: postWithId }, async (request, reply) => {
    const tier = await ownTier(request.console!.user.accountId, request.params.id);
    await vipTiers.delete(tier.id);
    return reply.redirect('/admin/vip-tiers?notice=deleted', 303);
  });
};

/** A tier form: perks one per line. */
function tierInput(form: Form) {
  const perks = form
    .text('perks')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter(Boolean);
  return {
    name: form.text('name'),
    milestone: form.number('milestone'),
    image_url: form.text('image_url'),
    perks: perks.map((name) => ({ name })),
  };
}

function perksText(tier: { perks?: Array<{ name: string }> }): string {
  return (tier.perks ?? []).map((perk) => perk.name).join('\n');
}

export default vipTiersPages;
