import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError, notFound } from '../errors.js';
import { type FormBody, type FormWording, formErrors } from './form.js';
import { FormBody as FormBodySchema, IdParams } from './form-schemas.js';
import { type ConsoleUser, type PageData, renderPage } from './views.js';

// What every console page shares: how it is sent, who asked for it, and its forms. The page files
// and routes.ts (sign-in, error pages) import it; it imports none of them, so the console's
// modules form no circle.

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the console's preHandler on every page but sign-in (and its stylesheet). */
    console: ConsoleUser | null;
    /**
     * A form sent again after signing in, its session having expired when it was first sent: the
     * page shows it as typed and saves nothing (`submitForm`).
     */
    consoleRestore: boolean;
  }
  interface FastifyContextConfig {
    /** A console page anyone may see: sign-in and the stylesheet. */
    consolePublic?: boolean;
    /**
     * A form a merchant types into (sent through `submitForm`): when it arrives after the
     * session expired, what was typed is kept across signing in again.
     */
    consoleForm?: boolean;
    /** A multipart upload: its page checks the CSRF token, a field read before the file. */
    consoleUpload?: boolean;
  }
}

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

// The route options the program's pages share: hidden from the OpenAPI document, an id in the
// path, a form body.
export const hide = { hide: true };
export const withId = { ...hide, params: IdParams };
export const post = { ...hide, body: FormBodySchema };
export const postWithId = { ...withId, body: FormBodySchema };
/** A form a merchant types into: kept across signing in again when its session expired. */
export const typed = { config: { consoleForm: true } };

/**
 * A console form: its template, title, the root its service names fields under, its fields, and
 * how its refusals are worded (the fields' labels, which count points, refusals shown at a field).
 */
export interface FormView extends FormWording {
  view: string;
  title: string;
  /** `earning_rule`: the service reports `earning_rule.name`, the form's field is `name`. */
  root: string;
  fields: readonly string[];
}

/**
 * Runs `save` with what the form holds; on success redirects (Post/Redirect/Get) to where it
 * says. When the service refuses the input, the form is shown again with what was typed and each
 * message next to its field, with the status the API would answer (nothing was saved: every
 * service validates the whole input before it writes).
 */
export async function submitForm(
  request: FastifyRequest,
  reply: FastifyReply,
  form: FormView & {
    values: FormBody;
    /** What the page shows besides the form; a function when only a refusal needs it (no reads on success). */
    data?: Record<string, unknown> | (() => Promise<Record<string, unknown>>);
    save: () => Promise<string>;
  },
): Promise<FastifyReply> {
  const data = async () => (typeof form.data === 'function' ? await form.data() : form.data);
  if (request.consoleRestore) {
    // Sent again after signing in (the session had expired): shown as typed, never saved.
    return sendPage(reply, request, 200, form.view, {
      title: form.title,
      ...(await data()),
      fieldLabels: form.labels,
      values: form.values,
      warning: RESTORED,
    });
  }
  try {
    return reply.redirect(await form.save(), 303);
  } catch (error) {
    if (!(error instanceof DomainError) || error.status >= 500 || error.status === 404) throw error;
    const points = await request.server.services.pointsSettings.get(request.console!.user.accountId);
    return sendPage(reply, request, error.status, form.view, {
      title: form.title,
      ...(await data()),
      fieldLabels: form.labels,
      values: form.values,
      errors: formErrors(error, form.root, form.fields, form, points.points_label),
    });
  }
}

/** What a form sent again after signing in says. */
export const RESTORED =
  'Your session expired, so nothing was saved. You are signed in again: here is what you typed. Check it and send it again.';

/**
 * The item of the signed-in account's `items` with this id, or `404 not_found`: another account's
 * id is not found either. For the lists an account has a handful of (tiers, products, keys, apps).
 */
export async function owned<T extends { id: number }>(items: Promise<T[]>, id: number, what: string): Promise<T> {
  const item = (await items).find((candidate) => candidate.id === id);
  if (!item) throw notFound(`${what} ${id} does not exist`);
  return item;
}

/** The one-line messages a page shows after a change (`?notice=saved`); other values show nothing. */
const NOTICES: Record<string, string> = {
  saved: 'Saved.',
  placing: 'Saved. Every customer is being placed again in the new program: the count below shows how far it got.',
  created: 'Created.',
  deleted: 'Deleted.',
  enabled: 'Enabled.',
  disabled: 'Disabled.',
  revoked: 'Revoked: it is refused from now on.',
  adjusted: 'Points adjusted.',
  used: 'Marked used.',
  cancelled: 'Cancelled: the points it cost are back on the customer’s balance.',
};

/** A form that did not come from this session's console: nothing is done. */
export function refuseForm(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendPage(reply, request, 403, 'error', {
    title: 'This form has expired',
    message:
      'The form was not sent from this console, or your session has ended (cookies must be enabled). ' +
      'Nothing was changed: open the page again and resend it.',
  });
}

/** The message of a page's `?notice=`, if it names one. */
export function noticeFor(notice: string | undefined): string | undefined {
  return notice === undefined ? undefined : NOTICES[notice];
}
