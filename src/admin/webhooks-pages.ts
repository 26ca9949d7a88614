import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { seal, unseal } from '../auth/secrets.js';
import { invalidParameter } from '../errors.js';
import { EVENT_TYPE_NAMES, EVENT_TYPES } from '../events/catalog.js';
import { Form } from './form.js';
import { PageQuery } from './form-schemas.js';
import { type FormView, hide, noticeFor, post, postWithId, sendPage, submitForm, typed, withId } from './pages.js';
import { COPY_CSP } from './views.js';

/** The event types an endpoint can choose (`ping` is sent only on request, to one endpoint). */
const EVENT_CHOICES = EVENT_TYPE_NAMES.filter((type) => type !== 'ping').map((type) => ({
  type,
  description: EVENT_TYPES[type].description,
}));

const ENDPOINT_FORM: FormView = {
  view: 'webhooks',
  title: 'Webhooks',
  root: 'webhook_endpoint',
  fields: ['url', 'description', 'enabled_events'],
  labels: { url: 'Endpoint URL', description: 'Description', enabled_events: 'Events to send' },
};

/** Delivery attempts per page of an endpoint's log: at a phone's width, about 200 px each. */
const LOG_PAGE = 20;

/** An endpoint made in the console receives what its `enabled_events` name (no app grant limits it). */
const consoleOwner = (accountId: number) => ({ accountId, grantId: null, scopes: null });

/**
 * Where a new or rotated secret waits for the one page that shows it: a cookie sent only to that
 * page, its value sealed with the console session's id (AES-GCM, bound to the endpoint), cleared
 * by the page that reads it. Like a new API key: Post/Redirect/Get, so reloading neither makes
 * another secret nor shows this one again, and another session cannot read it. A cookie rather
 * than the database because the secret is kept only encrypted for signing there, by the webhooks
 * service; it works across server processes, which an in-memory store would not.
 */
const SECRET_COOKIE = 'loyalty_webhook_secret';
/** As long as a new API key may still be shown (auth's REVEAL_WINDOW_MS). */
const SECRET_COOKIE_SECONDS = 10 * 60;
const secretPath = (id: number) => `/admin/webhooks/${id}/secret`;
const secretContext = (id: number) => `webhook_endpoint:${id}:secret`;

/** The one-line messages of the webhooks pages (`?notice=`), beside the console's own. */
const NOTICES: Record<string, string> = {
  'test-sent': 'Test event sent: its attempt appears in the delivery log below within seconds.',
  resent:
    'Event queued to be sent again: its attempts appear in the delivery log below, marked “resend” and numbered from 1.',
};

/**
 * Webhooks: the account's endpoints listed and added on one page; each with its details, edit
 * form, enable/disable, rotation, deletion, a test event and its delivery log with resend. A
 * secret is shown once, on the page a create or a rotation redirects to.
 */
const webhooksPages: FastifyPluginAsyncTypebox = async (app) => {
  const { webhooks } = app.services;

  /** Every endpoint of the account (at most 20 of them), oldest first as they were added. */
  const allEndpoints = async (accountId: number) => {
    const endpoints = [];
    let cursor: string | undefined;
    do {
      const page = await webhooks.list(accountId, { limit: 100, ...(cursor ? { cursor } : {}) });
      endpoints.push(...page.webhook_endpoints);
      cursor = page.metadata.next_cursor || undefined;
    } while (cursor);
    return endpoints;
  };

  const listData = async (accountId: number) => ({ endpoints: await allEndpoints(accountId), events: EVENT_CHOICES });

  /** Keeps a new secret, sealed to this session, for the page that shows it; returns that page. */
  const keepSecret = (request: FastifyRequest, reply: FastifyReply, id: number, secret: string): string => {
    reply.setCookie(SECRET_COOKIE, seal(secret, request.console!.session.id, secretContext(id)), {
      path: secretPath(id),
      httpOnly: true,
      sameSite: 'strict',
      secure: request.protocol === 'https',
      maxAge: SECRET_COOKIE_SECONDS,
    });
    return secretPath(id);
  };

  app.get('/webhooks', { schema: { ...hide, querystring: PageQuery } }, async (request, reply) => {
    return sendPage(reply, request, 200, ENDPOINT_FORM.view, {
      title: ENDPOINT_FORM.title,
      fieldLabels: ENDPOINT_FORM.labels,
      ...(await listData(request.console!.user.accountId)),
      values: {},
      notice: noticeFor(request.query.notice),
    });
  });

  app.post('/webhooks', { ...typed, schema: post }, async (request, reply) => {
    const { accountId } = request.console!.user;
    return submitForm(request, reply, {
      ...ENDPOINT_FORM,
      values: request.body,
      data: () => listData(accountId),
      save: async () => {
        const created = await webhooks.create(consoleOwner(accountId), endpointInput(new Form(request.body)));
        return keepSecret(request, reply, created.id, created.secret);
      },
    });
  });

  /** What the endpoint page shows besides its edit form: a page of its log short enough for a phone. */
  const endpointData = async (accountId: number, id: number, cursor: string | undefined) => {
    const endpoint = await webhooks.get(accountId, id);
    const log = await webhooks.deliveries(accountId, id, { limit: LOG_PAGE, ...(cursor ? { cursor } : {}) });
    return {
      title: endpoint.url,
      endpoint,
      events: EVENT_CHOICES,
      deliveries: log.webhook_deliveries,
      metadata: log.metadata,
    };
  };

  app.get('/webhooks/:id', { schema: { ...withId, querystring: PageQuery } }, async (request, reply) => {
    const data = await endpointData(request.console!.user.accountId, request.params.id, request.query.cursor);
    const { endpoint } = data;
    return sendPage(reply, request, 200, 'webhook-endpoint', {
      ...data,
      fieldLabels: ENDPOINT_FORM.labels,
      values: { url: endpoint.url, description: endpoint.description, enabled_events: endpoint.enabled_events },
      notice: NOTICES[request.query.notice ?? ''] ?? noticeFor(request.query.notice),
    });
  });

  app.post('/webhooks/:id', { ...typed, schema: postWithId }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const endpoint = await webhooks.get(accountId, request.params.id);
    return submitForm(request, reply, {
      ...ENDPOINT_FORM,
      view: 'webhook-endpoint',
      title: endpoint.url,
      values: request.body,
      data: () => endpointData(accountId, endpoint.id, undefined),
      save: async () => {
        await webhooks.update(consoleOwner(accountId), endpoint.id, endpointInput(new Form(request.body)));
        return `/admin/webhooks/${endpoint.id}?notice=saved`;
      },
    });
  });

  for (const status of ['enabled', 'disabled'] as const) {
    const action = status === 'enabled' ? 'enable' : 'disable';
    app.post(`/webhooks/:id/${action}`, { schema: postWithId }, async (request, reply) => {
      const { accountId } = request.console!.user;
      const endpoint = await webhooks.get(accountId, request.params.id);
      await webhooks.update(consoleOwner(accountId), endpoint.id, { status });
      return reply.redirect(`/admin/webhooks/${endpoint.id}?notice=${status}`, 303);
    });
  }

  app.get('/webhooks/:id/delete', { schema: withId }, async (request, reply) => {
    const endpoint = await webhooks.get(request.console!.user.accountId, request.params.id);
    return sendPage(reply, request, 200, 'confirm', {
      title: `Delete the webhook endpoint ${endpoint.url}?`,
      message:
        'No event is sent to it from now on, including deliveries still waiting to be retried, and its ' +
        'delivery log is deleted with it. This cannot be undone.',
      action: `/admin/webhooks/${endpoint.id}/delete`,
      confirm: 'Delete the endpoint',
      cancel: `/admin/webhooks/${endpoint.id}`,
    });
  });

  app.post('/webhooks/:id/delete', { schema: postWithId }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const endpoint = await webhooks.get(accountId, request.params.id);
    await webhooks.delete(accountId, endpoint.id);
    return reply.redirect('/admin/webhooks?notice=deleted', 303);
  });

  app.get('/webhooks/:id/rotate', { schema: withId }, async (request, reply) => {
    const endpoint = await webhooks.get(request.console!.user.accountId, request.params.id);
    return sendPage(reply, request, 200, 'confirm', {
      title: `Rotate the signing secret of ${endpoint.url}?`,
      message:
        'A new secret is made and shown once. For 24 hours deliveries are signed with both the new and the ' +
        'current secret, so the receiver keeps accepting them while you replace it; after that, only with the new one.',
      action: `/admin/webhooks/${endpoint.id}/rotate`,
      confirm: 'Rotate the secret',
      cancel: `/admin/webhooks/${endpoint.id}`,
    });
  });

  app.post('/webhooks/:id/rotate', { schema: postWithId }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const endpoint = await webhooks.get(accountId, request.params.id);
    const rotated = await webhooks.rotateSecret(accountId, endpoint.id);
    return reply.redirect(keepSecret(request, reply, rotated.id, rotated.secret), 303);
  });

  app.get('/webhooks/:id/secret', { schema: withId }, async (request, reply) => {
    const { session, user } = request.console!;
    const endpoint = await webhooks.get(user.accountId, request.params.id);
    const sealed = request.cookies[SECRET_COOKIE];
    const secret = sealed === undefined ? null : unseal(sealed, session.id, secretContext(endpoint.id));
    // Read once: a reload, the back button or a later visit finds nothing to show.
    if (sealed !== undefined) reply.clearCookie(SECRET_COOKIE, { path: secretPath(endpoint.id) });
    if (secret !== null) reply.header('content-security-policy', COPY_CSP);
    return sendPage(reply, request, 200, 'webhook-secret', {
      title: secret === null ? 'Signing secret shown already' : 'Signing secret',
      endpoint,
      secret,
    });
  });

  app.post('/webhooks/:id/test', { schema: postWithId }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const endpoint = await webhooks.get(accountId, request.params.id);
    await webhooks.sendTest(accountId, endpoint.id);
    return reply.redirect(`/admin/webhooks/${endpoint.id}?notice=test-sent`, 303);
  });

  app.post('/webhooks/:id/resend', { schema: postWithId }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const endpoint = await webhooks.get(accountId, request.params.id);
    // An unknown event id (or another account's) is the service's 404, shown as the console's.
    await webhooks.resend(accountId, new Form(request.body).text('event_id'), endpoint.id);
    return reply.redirect(`/admin/webhooks/${endpoint.id}?notice=resent`, 303);
  });
};

/**
 * An endpoint form as the API's input. "All events" (`*`) wins over single types ticked beside
 * it; none ticked is refused here, in the console's words, before the service is asked.
 */
function endpointInput(form: Form) {
  const events = form.all('enabled_events');
  if (events.length === 0) {
    throw invalidParameter('webhook_endpoint.enabled_events', 'Choose the events to send, or all events.');
  }
  return {
    url: form.text('url').trim(),
    description: form.text('description'),
    enabled_events: events.includes('*') ? ['*'] : events,
  };
}

export default webhooksPages;
