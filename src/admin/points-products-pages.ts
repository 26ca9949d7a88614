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
  'expires_after_days',
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
    expires_after_days: 'Codes expire after (days)',
    enabled: 'Enabled',
  },
  pointFields: ['points_price', 'variable_points_step', 'variable_points_min', 'variable_points_max'],
};

/** Points products: listed, created, edited, enabled or disabled, deleted while never bought. */
const pointsProductsPages: FastifyPluginAsyncTypebox = async (app) => {
  const { pointsProducts } = app.services;

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
          expires_after_days: price.expires_after_days,
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

/** A points product form as the input `PointsProductsService.create` and `update` take. */
function productInput(form: Form) {
  const type = form.text('exchange_type');
  const reward = {
    name: form.text('reward.name'),
    description: form.text('reward.description'),
    image_url: form.text('reward.image_url'),
  };
  const enabled = form.checked('enabled');
  const days = form.optional('expires_after_days');
  const expiry = {
    expires_after_days: days === undefined || days.trim() === '' ? null : form.number('expires_after_days'),
  };
  if (type === 'variable') {
    return {
      exchange_type: type,
      variable_points_step: form.number('variable_points_step'),
      variable_points_step_reward_value: form.number('variable_points_step_reward_value'),
      variable_points_min: form.number('variable_points_min'),
      variable_points_max: form.number('variable_points_max'),
      ...expiry,
      reward,
      enabled,
    };
  }
  return { exchange_type: type, points_price: form.number('points_price'), ...expiry, reward, enabled };
}

export default pointsProductsPages;
