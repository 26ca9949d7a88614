import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ALL_SCOPES, SCOPE_DESCRIPTIONS } from '../auth/scopes.js';
import { Form } from './form.js';
import { FormBody, IdParams, PageQuery } from './form-schemas.js';
import { noticeFor, owned, sendPage, submitForm } from './pages.js';
import { ADMIN_FILES, COPY_CSP } from './views.js';

const hide = { hide: true };
const SCOPES = ALL_SCOPES.map((scope) => ({ scope, description: SCOPE_DESCRIPTIONS[scope] }));
const COPY_SCRIPT = readFileSync(join(ADMIN_FILES, 'assets', 'copy.js'));

/** Who may call the API for the account: its API keys, and the apps it has connected. */
const accessPages: FastifyPluginAsyncTypebox = async (app) => {
  const { auth, oauth } = app.services;

  const keysPage = async (accountId: number) => ({
    keys: await auth.apiKeyDetails(accountId),
    scopes: SCOPES,
  });

  /** The account's key `id` (live ones only unless `revoked`), or 404: another account's key is not there either. */
  const ownKey = (accountId: number, id: number, revoked = false) =>
    owned(
      auth.apiKeyDetails(accountId).then((keys) => keys.filter((key) => revoked || !key.revoked)),
      id,
      'API key',
    );

  // Progressive enhancement of the read-only field that shows a new key (see the CSP above).
  app.get('/assets/copy.js', { config: { consolePublic: true }, schema: hide }, async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=300').type('text/javascript; charset=utf-8').send(COPY_SCRIPT),
  );

  app.get('/api-keys', { schema: { ...hide, querystring: PageQuery } }, async (request, reply) => {
    return sendPage(reply, request, 200, 'api-keys', {
      title: 'API keys',
      ...(await keysPage(request.console!.user.accountId)),
      // No scope is chosen for the merchant: a key gets what they tick.
      values: {},
      notice: noticeFor(request.query.notice),
    });
  });

  // Post/Redirect/Get: the key is made once, kept sealed to this session for the page it
  // redirects to, which shows it once; reloading that page cannot make a second key.
  app.post(
    '/api-keys',
    { config: { consoleForm: true }, schema: { ...hide, body: FormBody } },
    async (request, reply) => {
      const { session, user } = request.console!;
      const form = new Form(request.body);
      return submitForm(request, reply, {
        view: 'api-keys',
        title: 'API keys',
        root: 'api_key',
        fields: ['name', 'scopes'],
        values: request.body,
        data: () => keysPage(user.accountId),
        save: async () => {
          const created = await auth.createApiKey(user.accountId, form.all('scopes'), {
            name: form.text('name'),
            sealFor: session.id,
          });
          return `/admin/api-keys/${created.id}/created`;
        },
      });
    },
  );

  app.get('/api-keys/:id/created', { schema: { ...hide, params: IdParams } }, async (request, reply) => {
    const { session, user } = request.console!;
    const key = await ownKey(user.accountId, request.params.id, true);
    const raw = await auth.revealApiKey(user.accountId, key.id, session.id);
    // The page runs one script, the copy button's, served from the console like its stylesheet.
    if (raw !== null) reply.header('content-security-policy', COPY_CSP);
    return sendPage(reply, request, 200, 'api-key-created', {
      title: raw === null ? 'API key shown already' : 'API key created',
      key,
      raw,
    });
  });

  app.get('/api-keys/:id/revoke', { schema: { ...hide, params: IdParams } }, async (request, reply) => {
    const key = await ownKey(request.console!.user.accountId, request.params.id);
    return sendPage(reply, request, 200, 'confirm', {
      title: `Revoke the API key “${key.name}” (${key.key})?`,
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
      await auth.revokeApiKey(key.id);
      return reply.redirect('/admin/api-keys?notice=revoked', 303);
    },
  );

  app.get('/apps', { schema: { ...hide, querystring: PageQuery } }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const [grants, tokens] = await Promise.all([oauth.listGrants(accountId), auth.listIssuedAccessTokens(accountId)]);
    return sendPage(reply, request, 200, 'apps', {
      title: 'Connected apps',
      grants,
      tokens,
      notice: noticeFor(request.query.notice),
    });
  });

  // Tokens the `loyalty tokens issue` command made: an app holds them without a grant, so they
  // are listed (and revocable) beside the apps connected through OAuth.
  const ownToken = (accountId: number, id: number) => owned(auth.listIssuedAccessTokens(accountId), id, 'access token');

  app.get('/apps/tokens/:id/revoke', { schema: { ...hide, params: IdParams } }, async (request, reply) => {
    const token = await ownToken(request.console!.user.accountId, request.params.id);
    return sendPage(reply, request, 200, 'confirm', {
      title: `Revoke ${token.appName}'s token ${token.prefix}?`,
      message: `${token.appName} loses this token's access at once. Other tokens and connections of the app are kept.`,
      action: `/admin/apps/tokens/${token.id}/revoke`,
      confirm: 'Revoke the token',
      cancel: '/admin/apps',
    });
  });

  app.post(
    '/apps/tokens/:id/revoke',
    { schema: { ...hide, params: IdParams, body: FormBody } },
    async (request, reply) => {
      const token = await ownToken(request.console!.user.accountId, request.params.id);
      await auth.revokeIssuedAccessToken(request.console!.user.accountId, token.id);
      return reply.redirect('/admin/apps?notice=revoked', 303);
    },
  );

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
