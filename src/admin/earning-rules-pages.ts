import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { invalidParameter } from '../errors.js';
import { Form, flatten } from './form.js';
import { PageQuery } from './form-schemas.js';
import { type FormView, hide, noticeFor, post, postWithId, sendPage, submitForm, typed, withId } from './pages.js';

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

/** Earning rules: listed, created, edited, enabled or disabled, deleted. */
const earningRulesPages: FastifyPluginAsyncTypebox = async (app) => {
  const { earningRules, activityTypes, vipTiers, pointsSettings } = app.services;

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
};

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

export default earningRulesPages;
