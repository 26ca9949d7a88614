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
import type { Session } from '../sessions/service.js';
import accessPages from './access-pages.js';
import activityTypesPages from './activity-types-pages.js';
import customerPages from './customer-pages.js';
import earningRulesPages from './earning-rules-pages.js';
import { Form } from './form.js';
import { FormBody } from './form-schemas.js';
import importsPages from './imports-pages.js';
import overviewPage from './overview-page.js';
import { refuseForm, sendPage } from './pages.js';
import pointsProductsPages from './points-products-pages.js';
import pointsSettingsPages from './points-settings-pages.js';
import referralSettingsPages from './referral-settings-pages.js';
import referralsPages from './referrals-pages.js';
import rewardsPages from './rewards-pages.js';
import { ADMIN_FILES, CONSOLE_CSP, SECTIONS } from './views.js';
import vipTiersPages from './vip-tiers-pages.js';
import webhooksPages from './webhooks-pages.js';

export const ADMIN_COOKIE = 'loyalty_admin_session';
/** Strict: a page of another site can neither send the console's forms nor open it signed in. */
const COOKIE: SessionCookie = { name: ADMIN_COOKIE, path: '/admin', sameSite: 'strict' };
const STYLESHEET = readFileSync(join(ADMIN_FILES, 'assets', 'admin.css'));

/** Where a signed-in merchant may be sent back to after signing in: console pages only. */
const RETURN_PATH = /^\/admin(?:\/[A-Za-z0-9_-]+)*$/;

/**
 * Sign-in's fields: `csrf_token`, `email`, `password`, `next`, and when a form's session had
 * expired, `form_action` and the form's fields as `carry.<name>` (hence a record, bounded as
 * every console form is).
 */
const SignInBody = FormBody;
/** The prefix of a carried form's fields on the sign-in page. */
const CARRY = 'carry.';
/** Marks a form sent again after signing in: shown as typed, never saved. */
const RESTORE_FIELD = 'restore_form';
/** Never carried through the sign-in page: the old session's token and the restore mark. */
const NOT_CARRIED = new Set(['csrf_token', RESTORE_FIELD]);
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
  app.decorateRequest('consoleRestore', false);

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
      if (request.method === 'POST') return expiredForm(request, reply, session);
      const path = request.url.split('?')[0] ?? '/admin';
      const next = request.method === 'GET' && RETURN_PATH.test(path) ? `?next=${encodeURIComponent(path)}` : '';
      return reply.redirect(`/admin/sign-in${next}`, 303);
    }
    const csrf = sessions.csrfToken(session);
    const body = request.body as FormBody | undefined;
    // An upload's token is a field of its multipart body: its page checks it as it reads the parts.
    const upload = request.routeOptions.config.consoleUpload === true;
    if (request.method === 'POST' && !upload && !sessions.checkCsrf(session, body?.csrf_token)) {
      return refuseForm(request, reply);
    }
    request.console = { session, user: session.user, csrf };
    if (request.method === 'POST' && body?.[RESTORE_FIELD] !== undefined) {
      // Only forms are shown again; an action (disable, delete, revoke…) is never replayed.
      if (!request.routeOptions.config.consoleForm) {
        return sendPage(reply, request, 200, 'error', { title: 'Nothing was saved', message: EXPIRED_NOTHING_KEPT });
      }
      request.consoleRestore = true;
    }
  });

  /**
   * A form sent after its session expired (or from another site: SameSite=Strict sends no cookie
   * with a cross-site post). Nothing is saved; the sign-in page says so, and for a form the
   * merchant typed into, carries its fields as hidden inputs. After signing in, the form is
   * shown again filled in, for the merchant to check and send: never applied on its own, so a
   * cross-site post can at most pre-fill a form its victim then reads.
   */
  async function expiredForm(request: FastifyRequest, reply: FastifyReply, session: Session | null) {
    if (!session) {
      session = await sessions.start();
      setSessionCookie(request, reply, COOKIE, session);
    }
    const path = request.url.split('?')[0] ?? '/admin';
    const form = request.routeOptions.config.consoleForm === true && RETURN_PATH.test(path);
    const carried: Array<[string, string]> = [];
    if (form) {
      for (const [name, value] of Object.entries((request.body as FormBody | undefined) ?? {})) {
        if (NOT_CARRIED.has(name) || value === undefined) continue;
        for (const one of Array.isArray(value) ? value : [value]) carried.push([CARRY + name, one]);
      }
    }
    return sendSignIn(reply, request, 401, {
      csrf: sessions.csrfToken(session),
      next: sectionOf(path),
      expired: form ? EXPIRED_KEPT : EXPIRED_NOTHING_KEPT,
      ...(form ? { formAction: path, carried } : {}),
    });
  }

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
      const body = new Form(request.body);
      const session = await sessions.find(request.cookies[ADMIN_COOKIE]);
      if (!session || !sessions.checkCsrf(session, body.text('csrf_token'))) return refuseForm(request, reply);
      const email = body.text('email').trim();
      const password = body.text('password');
      const next = returnPath(body.optional('next'));
      const formAction = body.optional('form_action');
      const carried = Object.keys(request.body)
        .filter((name) => name.startsWith(CARRY))
        .flatMap((name) => body.all(name).map((value): [string, string] => [name, value]));
      const result = await sessions.signInFromForm(session, email, password, request.ip);
      if (result.kind === 'refused') {
        if (result.retryAfterSeconds) reply.header('retry-after', String(result.retryAfterSeconds));
        return sendSignIn(reply, request, result.status, {
          csrf: sessions.csrfToken(session),
          next,
          email,
          error: result.message,
          ...(formAction === undefined ? {} : { formAction, carried, expired: EXPIRED_KEPT }),
        });
      }
      // A new session id at sign-in: a cookie planted before it signs nobody in.
      setSessionCookie(request, reply, COOKIE, result.session);
      if (formAction !== undefined && RETURN_PATH.test(formAction) && formAction !== '/admin/sign-in') {
        // The form as typed, shown by its own page in the new session (its handler saves nothing
        // for a restored form): the same request the merchant would make by sending it again.
        const resend = new URLSearchParams(
          carried.map(([name, value]): [string, string] => [name.slice(CARRY.length), value]),
        );
        resend.set('csrf_token', sessions.csrfToken(result.session));
        resend.set(RESTORE_FIELD, '1');
        const shown = await app.inject({
          method: 'POST',
          url: formAction,
          headers: {
            cookie: `${ADMIN_COOKIE}=${result.session.id}`,
            'content-type': 'application/x-www-form-urlencoded',
          },
          payload: resend.toString(),
        });
        return reply
          .code(shown.statusCode)
          .type(String(shown.headers['content-type'] ?? 'text/html; charset=utf-8'))
          .send(shown.body);
      }
      return reply.redirect(next, 303);
    },
  );

  app.post('/sign-out', { schema: { hide: true, body: FormBody } }, async (request, reply) => {
    await sessions.end(request.console!.session);
    reply.clearCookie(ADMIN_COOKIE, { path: '/admin' });
    return reply.redirect('/admin/sign-in', 303);
  });

  await app.register(overviewPage);
  // The program's configuration, one file per resource; each form is read into the input the CLI
  // gives the same service, so the API's schema checks it and its messages are shown.
  await app.register(referralSettingsPages);
  await app.register(earningRulesPages);
  await app.register(activityTypesPages);
  await app.register(vipTiersPages);
  await app.register(pointsSettingsPages);
  await app.register(pointsProductsPages);
  await app.register(customerPages);
  await app.register(referralsPages);
  await app.register(rewardsPages);
  await app.register(accessPages);
  await app.register(webhooksPages);
  await app.register(importsPages);
};

function sendSignIn(
  reply: FastifyReply,
  request: FastifyRequest,
  status: number,
  data: {
    csrf: string;
    next: string;
    email?: string;
    error?: string;
    /** Why sign-in is asked again: a form was sent after the session expired. */
    expired?: string;
    /** That form's path and its fields, carried as hidden inputs (`carry.<name>`). */
    formAction?: string;
    carried?: Array<[string, string]>;
  },
): FastifyReply {
  return sendPage(reply, request, status, 'sign-in', { title: 'Sign in', ...data });
}

const EXPIRED_KEPT =
  'Your session expired; nothing was saved. Sign in again: the form will be shown with what you typed, for you to check and send again.';
const EXPIRED_NOTHING_KEPT = 'Your session expired; nothing was saved. Sign in again, then do it again.';

/** The console section a path belongs to: where an action whose session expired leads after sign-in. */
function sectionOf(path: string): string {
  return (
    SECTIONS.find((section) => path === section.href || path.startsWith(`${section.href}/`))?.href ?? '/admin/overview'
  );
}

function returnPath(next: string | undefined): string {
  return next !== undefined && RETURN_PATH.test(next) && next !== '/admin/sign-in' ? next : '/admin/overview';
}

export default adminRoutes;
