import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { type Static, Type } from 'typebox';
import { CUSTOMER_STATES } from '../customers/schemas.js';
import type { CustomerSearch } from '../customers/service.js';
import { invalidParameter } from '../errors.js';
import { PointsTransactionInput } from '../points-transactions/schemas.js';
import { isRunning } from '../referrals/service.js';
import { validate } from '../validate.js';
import { Form } from './form.js';
import { FormBody, IdParams, PageQuery } from './form-schemas.js';
import { type FormView, noticeFor, sendPage, submitForm } from './pages.js';
import { COPY_CSP } from './views.js';

/** The longest search text: enough for any email part or name, short enough to keep a scan cheap. */
const MAX_SEARCH = 100;

const CustomersQuery = Type.Object({
  ...PageQuery.properties,
  q: Type.Optional(Type.String({ maxLength: MAX_SEARCH })),
  /** The earlier form's field (an email), read as `q`: links made before keep working. */
  email: Type.Optional(Type.String({ maxLength: MAX_SEARCH })),
  state: Type.Optional(Type.String({ maxLength: 20 })),
  tier: Type.Optional(Type.String({ maxLength: 20 })),
});
type CustomersQuery = Static<typeof CustomersQuery>;

/** The search a customers page's query asks for, and the query string that asks for it again. */
function readSearch(query: CustomersQuery): { search: CustomerSearch; form: Record<string, string>; base: string } {
  const text = (query.q ?? query.email ?? '').trim();
  const state = query.state ?? '';
  const tier = query.tier ?? '';
  if (state !== '' && !(CUSTOMER_STATES as readonly string[]).includes(state)) {
    throw invalidParameter('state', `must be one of ${CUSTOMER_STATES.join(', ')}`);
  }
  if (tier !== '' && tier !== 'none' && !/^[1-9][0-9]{0,15}$/.test(tier)) {
    throw invalidParameter('tier', 'must be a VIP tier of this account, or none');
  }
  const search: CustomerSearch = {
    ...(text === '' ? {} : { text: text.toLowerCase() }),
    ...(state === '' ? {} : { state: state as (typeof CUSTOMER_STATES)[number] }),
    ...(tier === '' ? {} : { tierId: tier === 'none' ? null : Number(tier) }),
  };
  const form = { q: text, state, tier };
  const params = new URLSearchParams(Object.entries(form).filter(([, value]) => value !== ''));
  const base = params.size === 0 ? '/admin/customers' : `/admin/customers?${params}`;
  return { search, form, base };
}

const ADJUST_KEY = /^console-[0-9a-f-]{36}$/;
/** The referrals a customer's page lists (the newest); the referrals page has them all. */
const STARTED_REFERRALS = 5;

const ADJUST_FORM: FormView = {
  view: 'customer',
  title: 'Customer',
  root: 'points_transaction',
  fields: ['points_change', 'description', 'internal_note'],
  labels: { points_change: 'Points to add or remove', description: 'Reason', internal_note: 'Internal note' },
  pointFields: ['points_change'],
  // Removing more than the balance is refused at the points field, in the account's words.
  refusals: { insufficient_points: { field: 'points_change' } },
};

/** Customers: search by part of an email or name, state and tier; a customer's balance, tier, ledger, rewards, activities, referral URL and referrals; manual adjustments. */
const customerPages: FastifyPluginAsyncTypebox = async (app) => {
  const {
    customers,
    pointsTransactions,
    vipTiers,
    admin,
    pointsSettings,
    rewardFulfillments,
    referrals,
    referralSettings,
  } = app.services;

  /** A page of the console's customer search, as the customers page shows it. */
  const searchData = async (accountId: number, query: CustomersQuery) => {
    const { search, form, base } = readSearch(query);
    const page = await customers.search(accountId, search, query.cursor);
    return {
      search: form,
      searching: search.text !== undefined || search.state !== undefined || search.tierId !== undefined,
      customers: page.customers,
      tiers: page.tiers,
      metadata: page.metadata,
      base,
    };
  };

  app.get('/customers', { schema: { hide: true, querystring: CustomersQuery } }, async (request, reply) => {
    return sendPage(reply, request, 200, 'customers', {
      title: 'Customers',
      ...(await searchData(request.console!.user.accountId, request.query)),
    });
  });

  app.post(
    '/customers',
    { config: { consoleForm: true }, schema: { hide: true, body: FormBody } },
    async (request, reply) => {
      const { accountId } = request.console!.user;
      const form = new Form(request.body);
      return submitForm(request, reply, {
        view: 'customers',
        title: 'Customers',
        root: 'customer',
        fields: ['email', 'first_name', 'last_name'],
        labels: { email: 'Email', first_name: 'First name', last_name: 'Last name' },
        values: request.body,
        data: () => searchData(accountId, {}),
        save: async () => {
          const created = await customers.create(accountId, {
            email: form.text('email'),
            ...(form.optional('first_name') === undefined ? {} : { first_name: form.text('first_name') }),
            ...(form.optional('last_name') === undefined ? {} : { last_name: form.text('last_name') }),
          });
          return `/admin/customers/${created.id}?notice=created`;
        },
      });
    },
  );

  /**
   * Everything the customer page shows besides the adjustment form. A customer with a referral URL
   * gets its Copy button, the page's one script (COPY_CSP), on every answer that shows the page.
   */
  const customerData = async (reply: FastifyReply, accountId: number, id: number, cursor: string | undefined) => {
    const customer = await customers.get(accountId, id);
    const [ledger, tiers, activities, labels, rewards, started, program] = await Promise.all([
      pointsTransactions.page(accountId, { customer_id: id, cursor }),
      vipTiers.list(accountId),
      admin.latestActivities(accountId, id),
      pointsSettings.get(accountId),
      rewardFulfillments.latestFor(accountId, id),
      referrals.page(accountId, { sender_customer_id: id, limit: STARTED_REFERRALS }),
      referralSettings.program(accountId),
    ]);
    if (customer.referral_url !== null) reply.header('content-security-policy', COPY_CSP);
    // The API's transactions do not name the console user who made one: the console reads it beside them.
    const staff = await admin.adjustmentStaff(
      accountId,
      ledger.points_transactions.map((entry) => entry.id),
    );
    const tierName = (tierId: number | null) => tiers.find((tier) => tier.id === tierId)?.name ?? null;
    return {
      customer,
      // The adjustment form's Idempotency-Key: a form sent twice (a double click, a resend
      // after a lost answer) moves the points once.
      adjustKey: `console-${randomUUID()}`,
      tier: tierName(customer.vip_status.vip_tier_id),
      nextTier: tierName(customer.vip_status.next_vip_tier_id),
      ledger: ledger.points_transactions.map((entry) => ({ ...entry, by: staff.get(entry.id) ?? null })),
      metadata: ledger.metadata,
      activities,
      rewards,
      labels: labels.points_label,
      referrals: started.referrals,
      moreReferrals: started.metadata.next_cursor !== '',
      referralProgram: program === undefined ? 'none' : isRunning(program) ? 'running' : 'stopped',
      title: customer.email,
    };
  };

  app.get(
    '/customers/:id',
    { schema: { hide: true, params: IdParams, querystring: PageQuery } },
    async (request, reply) => {
      const { accountId } = request.console!.user;
      return sendPage(reply, request, 200, 'customer', {
        ...(await customerData(reply, accountId, request.params.id, request.query.cursor)),
        values: {},
        notice: noticeFor(request.query.notice),
      });
    },
  );

  app.post(
    '/customers/:id/adjust',
    { config: { consoleForm: true }, schema: { hide: true, params: IdParams, body: FormBody } },
    async (request, reply) => {
      const { accountId, userId } = request.console!.user;
      const customer = await customers.get(accountId, request.params.id);
      const form = new Form(request.body);
      return submitForm(request, reply, {
        ...ADJUST_FORM,
        title: customer.email,
        values: request.body,
        data: async () => ({ ...(await customerData(reply, accountId, customer.id, undefined)), failedForm: 'adjust' }),
        save: async () => {
          // The console asks for a reason (the API lets it be empty): every manual change says why.
          if (form.text('description').trim() === '') {
            throw invalidParameter(
              'points_transaction.description',
              'A reason is required: say why the points change.',
            );
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
          // The staff member is recorded with the transaction (not in the API's answer), shown in the ledger.
          await pointsTransactions.adjust(accountId, input, {
            ...(ADJUST_KEY.test(key) ? { key } : {}),
            createdByUserId: userId,
          });
          return `/admin/customers/${customer.id}?notice=adjusted`;
        },
      });
    },
  );

  app.post(
    '/customers/:id/state',
    { config: { consoleForm: true }, schema: { hide: true, params: IdParams, body: FormBody } },
    async (request, reply) => {
      const { accountId } = request.console!.user;
      const customer = await customers.get(accountId, request.params.id);
      return submitForm(request, reply, {
        view: 'customer',
        title: customer.email,
        root: 'customer',
        fields: ['state'],
        labels: { state: 'State' },
        values: request.body,
        data: async () => ({ ...(await customerData(reply, accountId, customer.id, undefined)), failedForm: 'state' }),
        save: async () => {
          await customers.setState(customer.id, new Form(request.body).text('state'));
          return `/admin/customers/${customer.id}?notice=saved`;
        },
      });
    },
  );
};

export default customerPages;
