import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { invalidParameter } from '../errors.js';
import { PointsTransactionInput } from '../points-transactions/schemas.js';
import { validate } from '../validate.js';
import { Form } from './form.js';
import { FormBody, IdParams, PageQuery } from './form-schemas.js';
import { type FormView, noticeFor, submitForm } from './pages.js';
import { sendPage } from './routes.js';

const CustomersQuery = Type.Object({
  ...PageQuery.properties,
  email: Type.Optional(Type.String({ maxLength: 354 })),
});

const ADJUST_KEY = /^console-[0-9a-f-]{36}$/;

const ADJUST_FORM: FormView = {
  view: 'customer',
  title: 'Customer',
  root: 'points_transaction',
  fields: ['points_change', 'description', 'internal_note'],
};

/** Customers: search by email, a customer's balance, tier, ledger and activities, manual adjustments. */
const customerPages: FastifyPluginAsyncTypebox = async (app) => {
  const { customers, pointsTransactions, vipTiers, reports, pointsSettings } = app.services;

  app.get('/customers', { schema: { hide: true, querystring: CustomersQuery } }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const email = request.query.email?.trim() || undefined;
    const page = await customers.page(accountId, { email, cursor: request.query.cursor });
    return sendPage(reply, request, 200, 'customers', {
      title: 'Customers',
      email: email ?? '',
      customers: page.customers,
      metadata: page.metadata,
      base: email === undefined ? '/admin/customers' : `/admin/customers?email=${encodeURIComponent(email)}`,
    });
  });

  app.post('/customers', { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const form = new Form(request.body);
    return submitForm(request, reply, {
      view: 'customers',
      title: 'Customers',
      root: 'customer',
      fields: ['email', 'first_name', 'last_name'],
      values: request.body,
      data: async () => {
        const page = await customers.page(accountId, {});
        return { email: '', customers: page.customers, metadata: page.metadata, base: '/admin/customers' };
      },
      save: async () => {
        const created = await customers.create(accountId, {
          email: form.text('email'),
          ...(form.optional('first_name') === undefined ? {} : { first_name: form.text('first_name') }),
          ...(form.optional('last_name') === undefined ? {} : { last_name: form.text('last_name') }),
        });
        return `/admin/customers/${created.id}?notice=created`;
      },
    });
  });

  /** Everything the customer page shows besides the adjustment form. */
  const customerData = async (accountId: number, id: number, cursor: string | undefined) => {
    const customer = await customers.get(accountId, id);
    const [ledger, tiers, activities, labels] = await Promise.all([
      pointsTransactions.page(accountId, { customer_id: id, cursor }),
      vipTiers.list(accountId),
      reports.latestActivities(accountId, id),
      pointsSettings.get(accountId),
    ]);
    const tierName = (tierId: number | null) => tiers.find((tier) => tier.id === tierId)?.name ?? null;
    return {
      customer,
      // The adjustment form's Idempotency-Key: a form sent twice (a double click, a resend
      // after a lost answer) moves the points once.
      adjustKey: `console-${randomUUID()}`,
      tier: tierName(customer.vip_status.vip_tier_id),
      nextTier: tierName(customer.vip_status.next_vip_tier_id),
      ledger: ledger.points_transactions,
      metadata: ledger.metadata,
      activities,
      labels: labels.points_label,
      title: customer.email,
    };
  };

  app.get(
    '/customers/:id',
    { schema: { hide: true, params: IdParams, querystring: PageQuery } },
    async (request, reply) => {
      const { accountId } = request.console!.user;
      return sendPage(reply, request, 200, 'customer', {
        ...(await customerData(accountId, request.params.id, request.query.cursor)),
        values: {},
        notice: noticeFor(request.query.notice),
      });
    },
  );

  app.post(
    '/customers/:id/adjust',
    { schema: { hide: true, params: IdParams, body: FormBody } },
    async (request, reply) => {
      const { accountId } = request.console!.user;
      const customer = await customers.get(accountId, request.params.id);
      const form = new Form(request.body);
      return submitForm(request, reply, {
        ...ADJUST_FORM,
        title: customer.email,
        values: request.body,
        data: async () => ({ ...(await customerData(accountId, customer.id, undefined)), failedForm: 'adjust' }),
        save: async () => {
          // The console asks for a reason (the API lets it be empty): every manual change says why.
          if (form.text('description').trim() === '') {
            throw invalidParameter('points_transaction.description', 'is required: say why the points change');
          }
          const input = validate(
            PointsTransactionInput,
            {
              customer_id: customer.id,
              points_change: form.number('points_change'),
              description: form.text('description'),
              internal_note: form.optional('internal_note') ?? null,
            },
            'points_transaction',
          );
          const key = form.text('idempotency_key');
          await pointsTransactions.create(accountId, input, ADJUST_KEY.test(key) ? key : undefined, JSON.stringify);
          return `/admin/customers/${customer.id}?notice=adjusted`;
        },
      });
    },
  );

  app.post(
    '/customers/:id/state',
    { schema: { hide: true, params: IdParams, body: FormBody } },
    async (request, reply) => {
      const { accountId } = request.console!.user;
      const customer = await customers.get(accountId, request.params.id);
      return submitForm(request, reply, {
        view: 'customer',
        title: customer.email,
        root: 'customer',
        fields: ['state'],
        values: request.body,
        data: async () => ({ ...(await customerData(accountId, customer.id, undefined)), failedForm: 'state' }),
        save: async () => {
          await customers.setState(customer.id, new Form(request.body).text('state'));
          return `/admin/customers/${customer.id}?notice=saved`;
        },
      });
    },
  );
};

export default customerPages;
