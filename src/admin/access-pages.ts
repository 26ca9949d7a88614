import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ALL_SCOPES, SCOPE_DESCRIPTIONS } from '../auth/scopes.js';
import { Form } from './form.js';
import { FormBody, IdParams, PageQuery } from './form-schemas.js';
import { noticeFor, owned, submitForm } from './pages.js';
import { sendPage } from './routes.js';

const hide = { hide: true };
const SCOPES = ALL_SCOPES.map((scope) => ({ scope, description: SCOPE_DESCRIPTIONS[scope] }));

/** Who may call the API for the account: its API keys, and the apps it has connected. */
const accessPages: FastifyPluginAsyncTypebox = async (app) => {
  const { credentials, oauth } = app.services;

  const keysPage = async (accountId: number) => ({
    keys: await credentials.listApiKeys(accountId),
    scopes: SCOPES,
  });

  /** The account's live key `id`, or 404 (another account's key is not there either). */
  const ownKey = (accountId: number, id: number) =>
    owned(
      credentials.listApiKeys(accountId).then((keys) => keys.filter((key) => !key.revoked)),
      id,
      'API key',
    );

  app.get('/api-keys', { schema: { ...hide, querystring: PageQuery } }, async (request, reply) => {
    return sendPage(reply, request, 200, 'api-keys', {
      title: 'API keys',
      ...(await keysPage(request.console!.user.accountId)),
      values: { scopes: ALL_SCOPES },
      notice: noticeFor(request.query.notice),
    });
  });

  app.post('/api-keys', { schema: { ...hide, body: FormBody } }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const scopes = new Form(request.body).all('scopes');
    try {
      const created = await credentials.createApiKey(accountId, scopes);
      // The key is shown on this answer and nowhere else, ever: no redirect that could replay it.
      return sendPage(reply, request, 201, 'api-key-created', { title: 'API key created', created });
    } catch (error) {
      return submitForm(request, reply, {
        view: 'api-keys',
        title: 'API keys',
        root: 'api_key',
        fields: ['scopes'],
        values: request.body,
        data: () => keysPage(accountId),
        save: () => Promise.reject(error),
      });
    }
  });

  app.get('/api-keys/:id/revoke', { schema: { ...hide, params: IdParams } }, async (request, reply) => {
    const key = await ownKey(request.console!.user.accountId, request.params.id);
    return sendPage(reply, request, 200, 'confirm', {
      title: `Revoke the API key ${key.key}?`,
      message: 'Every request made with it is refused from now on (within a second). This cannot be undone.',
      action: `/admin/api-keys/${key.id}/revoke`,
      confirm: 'Revoke the key',
      cancel: '/admin/api-keys',
    });
  });

  app.post(
    '/api-keys/:id/revoke',
    { schema: { ...hide, params: IdParams, body: FormBody } },
    async (request, reply) => {
      const key = await ownKey(request.console!.user.accountId, request.params.id);
      await credentials.revokeApiKey(key.id);
      return reply.redirect('/admin/api-keys?notice=revoked', 303);
    },
  );

  app.get('/apps', { schema: { ...hide, querystring: PageQuery } }, async (request, reply) => {
    return sendPage(reply, request, 200, 'apps', {
      title: 'Connected apps',
      grants: await oauth.listGrants(request.console!.user.accountId),
      notice: noticeFor(request.query.notice),
    });
  });

  const ownGrant = (accountId: number, id: number) => owned(oauth.listGrants(accountId), id, 'connected app');

  app.get('/apps/:id/revoke', { schema: { ...hide, params: IdParams } }, async (request, reply) => {
    const grant = await ownGrant(request.console!.user.accountId, request.params.id);
    return sendPage(reply, request, 200, 'confirm', {
      title: `Disconnect ${grant.appName}?`,
      message:
        `${grant.appName} loses access at once: its access and refresh tokens for this account are revoked. ` +
        'It can ask you to connect it again.',
      action: `/admin/apps/${grant.id}/revoke`,
      confirm: `Disconnect ${grant.appName}`,
      cancel: '/admin/apps',
    });
  });

  app.post('/apps/:id/revoke', { schema: { ...hide, params: IdParams, body: FormBody } }, async (request, reply) => {
    await oauth.revokeGrant(request.console!.user.accountId, request.params.id);
    return reply.redirect('/admin/apps?notice=revoked', 303);
  });
};

export default accessPages;
