import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { invalidParameter } from '../errors.js';
import { Form, flatten } from './form.js';
import { FormBody as FormBodySchema, IdParams, PageQuery } from './form-schemas.js';
import { type FormView, noticeFor, owned, submitForm } from './pages.js';
import { sendPage } from './routes.js';

const hide = { hide: true };
const withId = { ...hide, params: IdParams };
const post = { ...hide, body: FormBodySchema };
const postWithId = { ...withId, body: FormBodySchema };
/** A form a merchant types into: kept across signing in again when its session expired. */
const typed = { config: { consoleForm: true } };

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
const RULE_FIELDS = [
  'name',
  'image_url',
  'action_text',
  'action_url',
  'activity_token',
  'reward_value.type',
  'reward_value.fixed.value',
  'reward_value.variable.value',
  'reward_value.variable.per_amount',
  'earning_limit.type',
  'earning_limit.max',
  'earning_limit.rolling.unit',
  'earning_limit.rolling.unit_count',
  'restricted_to_vip_tier_ids',
  'enabled',
] as const;
const NEW_RULE_FORM: FormView = {
  view: 'earning-rule',
  title: 'New earning rule',
  root: 'earning_rule',
  fields: RULE_FIELDS,
  labels: {
    name: 'Name',
    image_url: 'Image URL',
    action_text: 'Call to action',
    action_url: 'Call to action URL',
    activity_token: 'Activity type',
    'reward_value.type': 'Points earned',
    'reward_value.fixed.value': 'Points each time',
    'reward_value.variable.value': 'Points',
    'reward_value.variable.per_amount': 'Per amount',
    'earning_limit.type': 'Earning limit',
    'earning_limit.max': 'Most times',
    'earning_limit.rolling.unit': 'Period unit',
    'earning_limit.rolling.unit_count': 'Period length',
    restricted_to_vip_tier_ids: 'Only for VIP tiers',
    enabled: 'Enabled',
  },
  pointFields: ['reward_value.fixed.value', 'reward_value.variable.value'],
};
const ACTIVITY_TYPE_FORM: FormView = {
  view: 'activity-types',
  title: 'Activity types',
  root: 'activity_type',
  fields: ['name'],
  labels: { name: 'Name' },
};
const TIER_FIELDS = ['name', 'milestone', 'image_url', 'perks'];
const TIERS_FORM: FormView = {
  view: 'vip-tiers',
  title: 'VIP tiers',
  root: 'vip_tier',
  fields: TIER_FIELDS,
  labels: { name: 'Name', milestone: 'Milestone', image_url: 'Image URL', perks: 'Perks' },
  pointFields: ['milestone'],
};
const POINTS_SETTINGS_FORM: FormView = {
  view: 'points-settings',
  title: 'Points settings',
  root: 'points_settings',
  fields: ['points_label.one', 'points_label.other'],
  labels: { 'points_label.one': 'One point is called', 'points_label.other': 'Several points are called' },
};
const PRODUCT_FIELDS = [
  'reward.name',
  'reward.description',
  'reward.image_url',
  'exchange_type',
  'points_price',
  'variable_points_step',
  'variable_points_step_reward_value',
  'variable_points_min',
  'variable_points_max',
  'enabled',
];
const NEW_PRODUCT_FORM: FormView = {
  view: 'points-product',
  title: 'New points product',
  root: 'points_product',
  fields: PRODUCT_FIELDS,
  labels: {
    'reward.name': 'Name',
    'reward.description': 'Description',
    'reward.image_url': 'Image URL',
    exchange_type: 'Kind of price',
    points_price: 'Price in points',
    variable_points_step: 'Points per step',
    variable_points_step_reward_value: 'Reward value per step',
    variable_points_min: 'Fewest points',
    variable_points_max: 'Most points',
    enabled: 'Enabled',
  },
  pointFields: ['points_price', 'variable_points_step', 'variable_points_min', 'variable_points_max'],
};

/**
 * The program's configuration: referral settings, earning rules, activity types, VIP tiers,
 * points settings and points products. Each form is read into the input the CLI gives the same
 * service, so the API's schema checks it and its messages are shown.
 */
const programPages: FastifyPluginAsyncTypebox = async (app) => {
  const { referralSettings, earningRules, activityTypes, vipTiers, pointsSettings, pointsProducts } = app.services;

  // --- Referral settings ----------------------------------------------------------------------

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

  // --- Earning rules --------------------------------------------------------------------------

  app.get('/earning-rules', { schema: { ...hide, querystring: PageQuery } }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const page = await earningRules.pageAll(accountId, { cursor: request.query.cursor });
    const types = await activityTypes.list(accountId);
    const settings = await pointsSettings.get(accountId);
    return sendPage(reply, request, 200, 'earning-rules', {
      title: 'Earning rules',
      points: settings.points_label,
      rules: page.items,
      metadata: page.metadata,
      typeNames: Object.fromEntries(types.map((type) => [type.token, type.name])),
      notice: noticeFor(request.query.notice),
    });
  });

  /** What the rule form needs besides the rule: the activity types and tiers to choose from. */
  const ruleChoices = async (accountId: number) => ({
    activityTypes: await activityTypes.list(accountId),
    tiers: await vipTiers.list(accountId),
  });

  app.get('/earning-rules/new', { schema: hide }, async (request, reply) => {
    const { accountId } = request.console!.user;
    return sendPage(reply, request, 200, NEW_RULE_FORM.view, {
      title: NEW_RULE_FORM.title,
      fieldLabels: NEW_RULE_FORM.labels,
      ...(await ruleChoices(accountId)),
      values: { 'reward_value.type': 'fixed', enabled: 'on' },
      action: '/admin/earning-rules',
    });
  });

  /**
   * The rule the form describes. The form offers the account's own tiers only; a tier id from
   * elsewhere (a forged form) is refused at the field, as the API refuses a foreign activity token.
   */
  const ruleFrom = (form: Form, tiers: Array<{ id: number }>) => {
    const input = ruleInput(form);
    const foreign = input.restricted_to_vip_tier_ids.find((id) => !tiers.some((tier) => tier.id === id));
    if (foreign !== undefined) {
      throw invalidParameter(
        'earning_rule.restricted_to_vip_tier_ids',
        `names no VIP tier of this account: ${foreign}`,
      );
    }
    return input;
  };

  app.post('/earning-rules', { ...typed, schema: post }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const choices = await ruleChoices(accountId);
    return submitForm(request, reply, {
      ...NEW_RULE_FORM,
      values: request.body,
      data: { ...choices, action: '/admin/earning-rules' },
      save: async () => {
        await earningRules.create(accountId, ruleFrom(new Form(request.body), choices.tiers));
        return '/admin/earning-rules?notice=created';
      },
    });
  });

  app.get('/earning-rules/:id', { schema: { ...withId, querystring: PageQuery } }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const rule = await earningRules.getStored(accountId, request.params.id);
    const { id: _id, reward: _reward, enabled, ...fields } = rule;
    return sendPage(reply, request, 200, NEW_RULE_FORM.view, {
      title: `Edit ${rule.name}`,
      fieldLabels: NEW_RULE_FORM.labels,
      rule,
      ...(await ruleChoices(accountId)),
      values: { ...flatten(fields), ...(enabled ? { enabled: 'on' } : {}) },
      action: `/admin/earning-rules/${rule.id}`,
      notice: noticeFor(request.query.notice),
    });
  });

  app.post('/earning-rules/:id', { ...typed, schema: postWithId }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const rule = await earningRules.getStored(accountId, request.params.id);
    const choices = await ruleChoices(accountId);
    return submitForm(request, reply, {
      ...NEW_RULE_FORM,
      title: `Edit ${rule.name}`,
      values: request.body,
      data: { rule, ...choices, action: `/admin/earning-rules/${rule.id}` },
      save: async () => {
        await earningRules.update(accountId, rule.id, ruleFrom(new Form(request.body), choices.tiers));
        return `/admin/earning-rules/${rule.id}?notice=saved`;
      },
    });
  });

  for (const [action, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    app.post(`/earning-rules/:id/${action}`, { schema: postWithId }, async (request, reply) => {
      const rule = await earningRules.getStored(request.console!.user.accountId, request.params.id);
      await earningRules.setEnabled(rule.id, enabled);
      return reply.redirect(`/admin/earning-rules?notice=${action}d`, 303);
    });
  }

  app.get('/earning-rules/:id/delete', { schema: withId }, async (request, reply) => {
    const rule = await earningRules.getStored(request.console!.user.accountId, request.params.id);
    return sendPage(reply, request, 200, 'confirm', {
      title: `Delete the earning rule ${rule.name}?`,
      message:
        'Customers stop earning with it at once. Points it has already credited stay in their balances. ' +
        'To stop it for a while instead, disable it.',
      action: `/admin/earning-rules/${rule.id}/delete`,
      confirm: 'Delete the rule',
      cancel: '/admin/earning-rules',
    });
  });

  app.post('/earning-rules/:id/delete', { schema: postWithId }, async (request, reply) => {
    const rule = await earningRules.getStored(request.console!.user.accountId, request.params.id);
    await earningRules.delete(rule.id);
    return reply.redirect('/admin/earning-rules?notice=deleted', 303);
  });

  // --- Activity types -------------------------------------------------------------------------

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

  // --- VIP tiers ------------------------------------------------------------------------------

  const ownTier = (accountId: number, id: number) => owned(vipTiers.list(accountId), id, 'VIP tier');

  app.get('/vip-tiers', { schema: { ...hide, querystring: PageQuery } }, async (request, reply) => {
    return sendPage(reply, request, 200, TIERS_FORM.view, {
      title: TIERS_FORM.title,
      fieldLabels: TIERS_FORM.labels,
      tiers: await vipTiers.list(request.console!.user.accountId),
      values: {},
      notice: noticeFor(request.query.notice),
    });
  });

  app.post('/vip-tiers', { ...typed, schema: post }, async (request, reply) => {
    const { accountId } = request.console!.user;
    return submitForm(request, reply, {
      ...TIERS_FORM,
      values: request.body,
      data: async () => ({ tiers: await vipTiers.list(accountId) }),
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

  // --- Points settings ------------------------------------------------------------------------

  app.get('/points-settings', { schema: { ...hide, querystring: PageQuery } }, async (request, reply) => {
    const settings = await pointsSettings.get(request.console!.user.accountId);
    return sendPage(reply, request, 200, POINTS_SETTINGS_FORM.view, {
      title: POINTS_SETTINGS_FORM.title,
      fieldLabels: POINTS_SETTINGS_FORM.labels,
      values: flatten(settings),
      notice: noticeFor(request.query.notice),
    });
  });

  app.post('/points-settings', { ...typed, schema: post }, async (request, reply) => {
    const form = new Form(request.body);
    return submitForm(request, reply, {
      ...POINTS_SETTINGS_FORM,
      values: request.body,
      save: async () => {
        await pointsSettings.set(request.console!.user.accountId, {
          points_label: { one: form.text('points_label.one'), other: form.text('points_label.other') },
        });
        return '/admin/points-settings?notice=saved';
      },
    });
  });

  // --- Points products ------------------------------------------------------------------------

  const ownProduct = (accountId: number, id: number) => owned(pointsProducts.listAll(accountId), id, 'points product');

  app.get('/points-products', { schema: { ...hide, querystring: PageQuery } }, async (request, reply) => {
    return sendPage(reply, request, 200, 'points-products', {
      title: 'Points products',
      products: await pointsProducts.listAll(request.console!.user.accountId),
      notice: noticeFor(request.query.notice),
    });
  });

  app.get('/points-products/new', { schema: hide }, async (request, reply) => {
    return sendPage(reply, request, 200, NEW_PRODUCT_FORM.view, {
      title: NEW_PRODUCT_FORM.title,
      fieldLabels: NEW_PRODUCT_FORM.labels,
      action: '/admin/points-products',
      values: { exchange_type: 'fixed', enabled: 'on' },
    });
  });

  app.post('/points-products', { ...typed, schema: post }, async (request, reply) => {
    return submitForm(request, reply, {
      ...NEW_PRODUCT_FORM,
      values: request.body,
      data: { action: '/admin/points-products' },
      save: async () => {
        await pointsProducts.create(request.console!.user.accountId, productInput(new Form(request.body)));
        return '/admin/points-products?notice=created';
      },
    });
  });

  app.get('/points-products/:id', { schema: { ...withId, querystring: PageQuery } }, async (request, reply) => {
    const product = await ownProduct(request.console!.user.accountId, request.params.id);
    const { id, exchange_type, reward, enabled, ...price } = product;
    return sendPage(reply, request, 200, NEW_PRODUCT_FORM.view, {
      title: `Edit ${reward.name}`,
      fieldLabels: NEW_PRODUCT_FORM.labels,
      action: `/admin/points-products/${id}`,
      product,
      values: {
        ...flatten({
          exchange_type,
          points_price: price.points_price,
          variable_points_step: price.variable_points_step,
          variable_points_step_reward_value: price.variable_points_step_reward_value,
          variable_points_min: price.variable_points_min,
          variable_points_max: price.variable_points_max,
          reward: { name: reward.name, description: reward.description, image_url: reward.image_url },
        }),
        ...(enabled ? { enabled: 'on' } : {}),
      },
      notice: noticeFor(request.query.notice),
    });
  });

  app.post('/points-products/:id', { ...typed, schema: postWithId }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const product = await ownProduct(accountId, request.params.id);
    return submitForm(request, reply, {
      ...NEW_PRODUCT_FORM,
      title: `Edit ${product.reward.name}`,
      values: request.body,
      data: { product, action: `/admin/points-products/${product.id}` },
      save: async () => {
        await pointsProducts.update(accountId, product.id, productInput(new Form(request.body)));
        return `/admin/points-products/${product.id}?notice=saved`;
      },
    });
  });

  app.get('/points-products/:id/delete', { schema: withId }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const product = await ownProduct(accountId, request.params.id);
    const bought = await pointsProducts.purchaseCount(accountId, product.id);
    if (bought > 0) {
      // Refused before it is asked: the confirmation would only lead to a refusal.
      return sendPage(reply, request, 200, 'confirm', {
        title: `${product.reward.name} cannot be deleted`,
        message:
          `It was bought ${bought === 1 ? 'once' : `${bought} times`}, and those purchases and the reward codes ` +
          'they issued refer to it. Disable it instead: it is then neither listed nor sold.',
        cancel: '/admin/points-products',
      });
    }
    return sendPage(reply, request, 200, 'confirm', {
      title: `Delete the points product ${product.reward.name}?`,
      message: 'It was never bought. It is no longer listed or sold, and GET /v1/points_products/{id} answers 404.',
      action: `/admin/points-products/${product.id}/delete`,
      confirm: 'Delete the product',
      cancel: '/admin/points-products',
    });
  });

  app.post('/points-products/:id/delete', { schema: postWithId }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const product = await ownProduct(accountId, request.params.id);
    await pointsProducts.delete(accountId, product.id);
    return reply.redirect('/admin/points-products?notice=deleted', 303);
  });

  for (const [action, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    app.post(`/points-products/:id/${action}`, { schema: postWithId }, async (request, reply) => {
      const product = await ownProduct(request.console!.user.accountId, request.params.id);
      await pointsProducts.setEnabled(product.id, enabled);
      return reply.redirect(`/admin/points-products?notice=${action}d`, 303);
    });
  }
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

/** An earning rule form as the input `earning-rules create` takes. */
function ruleInput(form: Form) {
  const valueType = form.text('reward_value.type');
  const limitType = form.text('earning_limit.type');
  const max = form.number('earning_limit.max');
  return {
    name: form.text('name'),
    image_url: form.text('image_url'),
    action_text: form.optional('action_text') ?? null,
    action_url: form.optional('action_url') ?? null,
    activity_token: form.optional('activity_token') ?? null,
    restricted_to_vip_tier_ids: form.all('restricted_to_vip_tier_ids').map(Number),
    reward: { type: 'points' },
    reward_value:
      valueType === 'variable'
        ? {
            type: valueType,
            variable: {
              value: form.number('reward_value.variable.value'),
              per_amount: form.number('reward_value.variable.per_amount'),
            },
          }
        : { type: valueType, fixed: { value: form.number('reward_value.fixed.value') } },
    earning_limit:
      limitType === ''
        ? null
        : limitType === 'rolling'
          ? {
              type: limitType,
              max,
              rolling: {
                unit: form.text('earning_limit.rolling.unit'),
                unit_count: form.number('earning_limit.rolling.unit_count'),
              },
            }
          : { type: limitType, max },
    enabled: form.checked('enabled'),
  };
}

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

function productInput(form: Form) {
  const type = form.text('exchange_type');
  const reward = {
    name: form.text('reward.name'),
    description: form.text('reward.description'),
    image_url: form.text('reward.image_url'),
  };
  const enabled = form.checked('enabled');
  if (type === 'variable') {
    return {
      exchange_type: type,
      variable_points_step: form.number('variable_points_step'),
      variable_points_step_reward_value: form.number('variable_points_step_reward_value'),
      variable_points_min: form.number('variable_points_min'),
      variable_points_max: form.number('variable_points_max'),
      reward,
      enabled,
    };
  }
  return { exchange_type: type, points_price: form.number('points_price'), reward, enabled };
}

export default programPages;
