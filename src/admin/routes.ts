import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { toContractError } from '../error-mapping.js';
import { logFailure } from '../http/errors.js';
import { type SessionCookie, setSessionCookie } from '../http/session-cookie.js';
import type { Session, SessionUser } from '../oauth/sessions.js';
import accessPages from './access-pages.js';
import customerPages from './customer-pages.js';
import { FormBody } from './form-schemas.js';
import overviewPage from './overview-page.js';
import programPages from './program-pages.js';
import { ADMIN_FILES, CONSOLE_CSP, type PageData, renderPage } from './views.js';

export const ADMIN_COOKIE = 'loyalty_admin_session';
/** Strict: a page of another site can neither send the console's forms nor open it signed in. */
const COOKIE: SessionCookie = { name: ADMIN_COOKIE, path: '/admin', sameSite: 'strict' };
const STYLESHEET = readFileSync(join(ADMIN_FILES, 'assets', 'admin.css'));

/** The signed-in merchant of a console request, with the session's CSRF token. */
export interface ConsoleUser {
  session: Session;
  user: SessionUser;
  csrf: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the console's preHandler on every page but sign-in (and its stylesheet). */
    console: ConsoleUser | null;
  }
  interface FastifyContextConfig {
    /** A console page anyone may see: sign-in and the stylesheet. */
    consolePublic?: boolean;
  }
}

/** Where a signed-in merchant may be sent back to after signing in: console pages only. */
const RETURN_PATH = /^\/admin(?:\/[A-Za-z0-9_-]+)*$/;

const SignInBody = Type.Object({
  csrf_token: Type.Optional(Type.String({ maxLength: 200 })),
  email: Type.Optional(Type.String({ maxLength: 1000 })),
  password: Type.Optional(Type.String({ maxLength: 4096 })),
  next: Type.Optional(Type.String({ maxLength: 2048 })),
});
const SignInQuery = Type.Object({ next: Type.Optional(Type.String({ maxLength: 2048 })) });

/**
 * The merchant console, registered under the prefix /admin: server-rendered pages (Eta templates, escaping by default), no
 * JavaScript, a strict CSP, sessions of the OAuth sign-in (same users, throttle and CSRF tokens)
 * in their own cookie. Every page but sign-in needs a signed-in session, and every form sent to
 * it carries the session's CSRF token. The pages call the same services as the API and the CLI.
 * See docs/console.md.
 */
const adminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { sessions } = app.services;
  await app.register(formbody);
  await app.register(cookie);
  app.decorateRequest('console', null);

  // Pages show balances, keys and CSRF tokens: never cached, never framed, no outside resources.
  // Set on the way in, so the app's default policy for other routes (set in onSend) keeps this one.
  app.addHook('onRequest', async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    reply.header('content-security-policy', CONSOLE_CSP);
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const domain = toContractError(error);
    logFailure(request, error, domain);
    if (domain.code === 'unavailable' || domain.code === 'rate_limited') reply.header('retry-after', '1');
    const title =
      domain.status === 404
        ? 'Not found'
        : domain.status >= 500
          ? 'Something went wrong'
          : domain.status === 403
            ? 'Not allowed'
            : 'This request cannot be completed';
    const message =
      domain.status === 404
        ? 'There is nothing here, or it belongs to another account.'
        : domain.status >= 500
          ? 'The server could not complete the request. Nothing was changed; try again shortly.'
          : domain.message;
    return sendPage(reply, request, domain.status, 'error', { title, message });
  });

  app.setNotFoundHandler((request, reply) =>
    sendPage(reply, request, 404, 'error', {
      title: 'Not found',
      message: 'There is nothing here, or it belongs to another account.',
    }),
  );

  // Every console page: who is signed in, and for a form, whether it came from this session.
  app.addHook('preHandler', async (request, reply) => {
    if (request.routeOptions.config.consolePublic) return;
    const session = await sessions.find(request.cookies[ADMIN_COOKIE]);
    if (!session?.user) {
      const path = request.url.split('?')[0] ?? '/admin';
      const next = request.method === 'GET' && RETURN_PATH.test(path) ? `?next=${encodeURIComponent(path)}` : '';
      return reply.redirect(`/admin/sign-in${next}`, 303);
    }
    const csrf = sessions.csrfToken(session);
    if (request.method === 'POST' && !sessions.checkCsrf(session, (request.body as FormBody | undefined)?.csrf_token)) {
      return refuseForm(request, reply);
    }
    request.console = { session, user: session.user, csrf };
  });

  app.get('/assets/admin.css', { config: { consolePublic: true }, schema: { hide: true } }, async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=300').type('text/css; charset=utf-8').send(STYLESHEET),
  );

  app.get('/', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/admin/overview', 303));

  app.get(
    '/sign-in',
    { config: { consolePublic: true }, schema: { hide: true, querystring: SignInQuery } },
    async (request, reply) => {
      let session = await sessions.find(request.cookies[ADMIN_COOKIE]);
      const next = returnPath(request.query.next);
      if (session?.user) return reply.redirect(next, 303);
      if (!session) {
        session = await sessions.start();
        setSessionCookie(request, reply, COOKIE, session);
      }
      return sendSignIn(reply, request, 200, { csrf: sessions.csrfToken(session), next });
    },
  );

  app.post(
    '/sign-in',
    { config: { consolePublic: true }, schema: { hide: true, body: SignInBody } },
    async (request, reply) => {
      const body = request.body;
      const session = await sessions.find(request.cookies[ADMIN_COOKIE]);
      if (!session || !sessions.checkCsrf(session, body.csrf_token)) return refuseForm(request, reply);
      const email = (body.email ?? '').trim();
      const password = body.password ?? '';
      const next = returnPath(body.next);
      const result = await sessions.signInFromForm(session, email, password, request.ip);
      if (result.kind === 'refused') {
        if (result.retryAfterSeconds) reply.header('retry-after', String(result.retryAfterSeconds));
        const error = result.message;
        return sendSignIn(reply, request, result.status, { csrf: sessions.csrfToken(session), next, email, error });
      }
      // A new session id at sign-in: a cookie planted before it signs nobody in.
      setSessionCookie(request, reply, COOKIE, result.session);
      return reply.redirect(next, 303);
    },
  );

  app.post('/sign-out', { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    await sessions.end(request.console!.session);
    reply.clearCookie(ADMIN_COOKIE, { path: '/admin' });
    return reply.redirect('/admin/sign-in', 303);
  });

  await app.register(overviewPage);
  await app.register(programPages);
  await app.register(customerPages);
  await app.register(accessPages);
};

/** A console page with the signed-in merchant's navigation (when there is one). */
export function sendPage(
  reply: FastifyReply,
  request: FastifyRequest,
  status: number,
  view: string,
  data: Record<string, unknown> & { title: string },
): FastifyReply {
  const page: PageData = { ...data, console: request.console, path: request.url.split('?')[0] ?? '' };
  return reply.code(status).type('text/html; charset=utf-8').send(renderPage(view, page));
}

function sendSignIn(
  reply: FastifyReply,
  request: FastifyRequest,
  status: number,
  data: { csrf: string; next: string; email?: string; error?: string },
): FastifyReply {
  return sendPage(reply, request, status, 'sign-in', { title: 'Sign in', ...data });
}

function refuseForm(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendPage(reply, request, 403, 'error', {
    title: 'This form has expired',
    message:
      'The form was not sent from this console, or your session has ended (cookies must be enabled). ' +
      'Nothing was changed: open the page again and resend it.',
  });
}

function returnPath(next: string | undefined): string {
  return next !== undefined && RETURN_PATH.test(next) && next !== '/admin/sign-in' ? next : '/admin/overview';
}

export default adminRoutes;
