import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { DomainError, type ErrorDetail, invalidParameter } from '../errors.js';
import { errorResponse } from './schemas.js';

/**
 * Strict input for the API's routes (`/v1`), read from each route's own schemas once, when the
 * route is added, so no schema repeats it:
 * - an integer path or query parameter (an id) must be written as decimal digits, without
 *   leading zeros: the validator coerces, and would read `0x10` as 16, `1e3` as 1000 and ` 1`,
 *   `+1`, `01`, `1.0` as 1, so one object would answer at many addresses;
 * - a query parameter the route does not declare is `400 invalid_parameter` naming it, as Stripe
 *   answers, rather than ignored: a client paging with `page=2` would get the first page forever,
 *   and `email[]=a` the whole list unfiltered;
 * - a body sent to an operation that takes none is `400 invalid_parameter` naming its fields;
 * - a body with a `Content-Encoding` other than `identity` is `415 unsupported_media_type`
 *   (RFC 9110 15.5.16), with `Accept-Encoding: identity` saying what is accepted: nothing here
 *   decodes a coding, so such a body would be read as plain.
 * The OAuth endpoints keep their own rules (RFC 6749 3.1: unknown parameters are ignored) and the
 * console's pages are for people, so neither is concerned.
 */
export function registerStrictInput(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    // The referral landing page answers anything that is not a code with its 404 page.
    if (!route.url?.startsWith('/r/')) route.onRequest = [refuseNulInUrl as OnRequestHook, ...hooksOf(route.onRequest)];
    if (!route.url?.startsWith('/v1/')) return;
    const check = strictInputCheck(app, route);
    route.onRequest = [...hooksOf(route.onRequest), check as OnRequestHook];
    if (route.schema?.body === undefined && sendsBody(route.method)) {
      route.preValidation = [...hooksOf(route.preValidation), refuseUntakenBody as OnRequestHook];
    }
    // The refusal of an unknown parameter is a 400 that every route can now answer.
    const response = route.schema?.response as Record<string, unknown> | undefined;
    if (route.schema && response && !('400' in response)) {
      route.schema = {
        ...route.schema,
        response: { ...response, 400: UNKNOWN_PARAMETER_RESPONSE },
      };
    }
  });
}

/** Whether a route of `method` may be sent a body (a GET's is not read at all). */
function sendsBody(method: RouteOptions['method']): boolean {
  return (Array.isArray(method) ? method : [method]).some((one) => BODY_METHODS.has(String(one).toUpperCase()));
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * A body sent to an operation that takes none (`POST …/cancel`, `DELETE …`): `400
 * invalid_parameter` naming its fields, rather than ignored, so a client that believes it sent a
 * reason learns it was not read, and a retry with another body is not answered as the first one
 * (the idempotent replay never sees it). `{}` and an empty body are no body.
 */
const refuseUntakenBody: Hook = (request, _reply, done) => {
  const { body } = request;
  if (body === undefined) return done();
  const isObject = typeof body === 'object' && body !== null && !Array.isArray(body);
  const fields = isObject ? Object.keys(body) : null;
  if (fields?.length === 0) {
    request.body = undefined;
    return done();
  }
  const details: ErrorDetail[] = fields
    ? fields.slice(0, MAX_NAMED).map((field) => ({ field: shown(field), message: 'is not a field of this operation' }))
    : [{ field: 'body', message: 'must be left out' }];
  const named = details.map((detail) => detail.field).join(', ');
  done(new DomainError('invalid_parameter', `this operation takes no body: leave out ${named}`, details));
};

/**
 * A NUL character in a query or path parameter, on every route (the API, the OAuth endpoints, the
 * console's searches) but the referral landing page: `400 invalid_parameter` naming it. PostgreSQL cannot hold NUL in text and
 * failed such a search with an error where SQLite answered an empty list; no stored value holds
 * one (bodies refuse it by schema), so it is refused before either engine is asked, and the same
 * request gets the same answer on both. Only a URL that spells `%00` is searched.
 */
const refuseNulInUrl: Hook = (request, _reply, done) => {
  if (!request.url.includes('%00')) return done();
  const parameters = [
    ...Object.entries((request.params ?? {}) as Record<string, unknown>),
    ...Object.entries((request.query ?? {}) as Record<string, unknown>),
  ];
  for (const [name, value] of parameters) {
    const values = Array.isArray(value) ? value : [value];
    if (name.includes('\u0000') || values.some((one) => typeof one === 'string' && one.includes('\u0000'))) {
      return done(invalidParameter(shown(name.replaceAll('\u0000', '\\0')), NUL_MESSAGE));
    }
  }
  done();
};

const NUL_MESSAGE = 'must not contain a NUL character (%00)';

/** Parameter names read as a request to page by number: this API pages with cursors. */
const PAGE_NUMBER_PARAMS = new Set(['page', 'page_size', 'per_page', 'offset']);
/** Names an error message lists before it says how many more there are. */
const MAX_NAMED = 20;
/** An integer as decimal digits: no sign but `-`, no leading zeros, spaces, exponent or radix. */
const DECIMAL_INTEGER = /^(?:0|-?[1-9][0-9]*)$/;
const DECIMAL_MESSAGE = 'must be an integer written in decimal digits, such as 42';

/** The 400 of an operation that takes no query parameters, with an answer it really sends. */
const UNKNOWN_PARAMETER_RESPONSE = errorResponse(
  ['invalid_parameter'],
  'invalid_parameter: a query parameter this operation does not take',
  (() => {
    const { message, details } = unknownParameters(['foo'], new Set(), false);
    return { message, ...(details ? { details } : {}) };
  })(),
);

type Hook = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => void;

/** One route-level onRequest hook, as Fastify types it. */
type OnRequestHook = Exclude<NonNullable<RouteOptions['onRequest']>, readonly unknown[]>;

/** A route's own onRequest hooks as a new array (the HEAD route Fastify adds shares the old one). */
function hooksOf(hooks: RouteOptions['onRequest']): OnRequestHook[] {
  if (!hooks) return [];
  return Array.isArray(hooks) ? [...hooks] : [hooks as OnRequestHook];
}

/** The route's one onRequest check (after authentication, before the body is read). */
function strictInputCheck(app: FastifyInstance, route: RouteOptions): Hook {
  const query = propertiesOf(app, route.schema?.querystring);
  const known = query ? new Set(Object.keys(query)) : new Set<string>();
  // `limit` keeps its own rule (http/pagination.ts): a count, where `007` names nothing twice.
  const integerQuery = query ? integerNames(query).filter((name) => name !== 'limit') : [];
  const params = propertiesOf(app, route.schema?.params);
  const integerParams = params ? integerNames(params) : [];
  const pagesByCursor = known.has('cursor');
  // A querystring schema whose properties cannot be listed (a pattern, a free-form object) keeps
  // its own rules for unknown names.
  const checksNames = query !== null || route.schema?.querystring === undefined;

  return (request, _reply, done) => {
    const encoding = request.headers['content-encoding'];
    if (encoding !== undefined && hasBody(request) && !isIdentity(encoding)) {
      return done(
        new DomainError(
          'unsupported_media_type',
          `Content-Encoding ${JSON.stringify(encoding.slice(0, 40))} is not supported: send the body uncompressed`,
          undefined,
          { 'accept-encoding': 'identity' },
        ),
      );
    }
    for (const name of integerParams) {
      const value = (request.params as Record<string, unknown>)[name];
      if (typeof value === 'string' && !DECIMAL_INTEGER.test(value))
        return done(invalidParameter(name, DECIMAL_MESSAGE));
    }
    const values = request.query as Record<string, unknown>;
    if (checksNames) {
      const unknown = unknownNames(values, known);
      if (unknown) return done(unknownParameters(unknown, known, pagesByCursor));
    }
    for (const name of integerQuery) {
      const value = values[name];
      if (typeof value === 'string' && !DECIMAL_INTEGER.test(value))
        return done(invalidParameter(name, DECIMAL_MESSAGE));
    }
    done();
  };
}

/** The names of `values` that are not `known`, or null when there are none (the common case, without allocating). */
function unknownNames(values: Record<string, unknown>, known: Set<string>): string[] | null {
  let unknown: string[] | null = null;
  for (const name in values) {
    if (known.has(name)) continue;
    unknown ??= [];
    unknown.push(name);
  }
  return unknown;
}

/** `400 invalid_parameter` naming each unknown parameter, pointing to cursors for page numbers. */
function unknownParameters(names: string[], known: Set<string>, pagesByCursor: boolean): DomainError {
  const details: ErrorDetail[] = names.slice(0, MAX_NAMED).map((name) => ({
    field: shown(name),
    message: `is not a parameter of this operation${hintFor(name, known, pagesByCursor)}`,
  }));
  const listed =
    names
      .slice(0, MAX_NAMED)
      .map((name) => shown(name) || '""')
      .join(', ') + (names.length > MAX_NAMED ? `, and ${names.length - MAX_NAMED} more` : '');
  const accepted = known.size > 0 ? `it takes ${[...known].join(', ')}` : 'it takes no query parameters';
  const paging =
    pagesByCursor && names.some((name) => PAGE_NUMBER_PARAMS.has(name))
      ? '. This API pages with `cursor` and `limit`, not page numbers: send `limit`, then `cursor` set to the ' +
        '`metadata.next_cursor` of the page before'
      : '';
  return new DomainError(
    'invalid_parameter',
    `unknown query parameter${names.length > 1 ? 's' : ''}: ${listed} (${accepted})${paging}`,
    details,
  );
}

/** A name as the answer repeats it: at most 100 characters (a query string may hold 16 KiB). */
function shown(name: string): string {
  return name.length > 100 ? `${name.slice(0, 100)}…` : name;
}

function hintFor(name: string, known: Set<string>, pagesByCursor: boolean): string {
  if (pagesByCursor && PAGE_NUMBER_PARAMS.has(name)) return '; page with `cursor` and `limit`';
  const bare = name.replace(/\[.*$/, '');
  if (bare !== name && known.has(bare)) return `; send \`${bare}\` once, without brackets`;
  return '';
}

function isIdentity(encoding: string): boolean {
  const value = encoding.trim().toLowerCase();
  return value === '' || value === 'identity';
}

/** As Node frames it: a body follows when a length above 0 or a transfer coding is sent. */
function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** The declared properties of an object schema (its `$ref`, `allOf` branches included), or null. */
function propertiesOf(app: FastifyInstance, schema: unknown): Record<string, unknown> | null {
  if (typeof schema !== 'object' || schema === null) return null;
  const object = schema as {
    $ref?: string;
    properties?: Record<string, unknown>;
    allOf?: unknown[];
    patternProperties?: unknown;
    additionalProperties?: unknown;
  };
  if (typeof object.$ref === 'string') return propertiesOf(app, app.getSchema(object.$ref.replace(/#$/, '')));
  if (object.patternProperties !== undefined) return null;
  if (object.additionalProperties !== undefined && object.additionalProperties !== false) return null;
  const properties: Record<string, unknown> = { ...object.properties };
  for (const branch of object.allOf ?? []) {
    const more = propertiesOf(app, branch);
    if (!more) return null;
    Object.assign(properties, more);
  }
  return properties;
}

/** The properties whose schema is an integer (or an integer or null). */
function integerNames(properties: Record<string, unknown>): string[] {
  return Object.keys(properties).filter((name) => {
    const type = (properties[name] as { type?: unknown } | undefined)?.type;
    return type === 'integer' || (Array.isArray(type) && type.includes('integer'));
  });
}
