import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';
import { ALL_SCOPES, SCOPE_DESCRIPTIONS } from '../auth/scopes.js';
import { type Config, publicBaseUrl } from '../config.js';
import { EVENT_TYPE_NAMES, EVENT_TYPES, type EventType } from '../events/catalog.js';
import { EVENT_DATA, eventOf } from '../events/schemas.js';
import { PACKAGE_ROOT, VERSION } from '../version.js';
import type { RouteAuth } from './auth.js';
import { errorResponse } from './schemas.js';

/** The document's version: 3.1, whose schemas are JSON Schema, so `null` is a type validators check. */
export const OPENAPI_VERSION = '3.1.0';

/**
 * The policy of the Swagger UI page: its own scripts and styles only (it needs inline styles),
 * calls to this origin only, never framed.
 */
export const DOCS_CSP = {
  'default-src': ["'self'"],
  'base-uri': ["'self'"],
  'script-src': ["'self'"],
  'style-src': ["'self'", "'unsafe-inline'"],
  'img-src': ["'self'", 'data:'],
  'object-src': ["'none'"],
  'form-action': ["'self'"],
  'frame-ancestors': ["'none'"],
};

/** The files of the /docs page's theme: src/http/docs-assets, which tsc does not copy to dist/. */
const docsAsset = (name: string) => readFileSync(join(PACKAGE_ROOT, 'src', 'http', 'docs-assets', name), 'utf8');

const DOCS_ICON = docsAsset('icon.svg');

/** The service's name, icon, colours and header over Swagger UI's (theme.css and theme.js say why each). */
const DOCS_THEME = {
  title: 'Loyalty API reference',
  css: [{ filename: 'theme.css', content: docsAsset('theme.css') }],
  js: [{ filename: 'theme.js', content: docsAsset('theme.js') }],
  favicon: [{ filename: 'icon.svg', rel: 'icon', type: 'image/svg+xml', sizes: 'any', content: DOCS_ICON }],
};

type Header = { description: string; required?: boolean; schema: Record<string, unknown> };

/** Response headers, declared once under components.headers and referenced by every response. */
const HEADERS: Record<string, Header> = {
  'X-Request-Id': {
    description:
      "The request's id: the caller's own X-Request-Id if short and plain, else a UUID. Equal to `error.request_id`.",
    required: true,
    schema: { type: 'string' },
  },
  'RateLimit-Limit': {
    description: 'Requests per second allowed to this credential (absent when the limit is off).',
    schema: { type: 'integer' },
  },
  'RateLimit-Remaining': {
    description: 'Requests left in the current window.',
    schema: { type: 'integer' },
  },
  'RateLimit-Reset': {
    description: 'Seconds until the window resets.',
    schema: { type: 'integer' },
  },
  'Retry-After': {
    description: 'Seconds to wait before retrying.',
    required: true,
    schema: { type: 'integer' },
  },
  'WWW-Authenticate': {
    description: 'The Bearer challenge (RFC 6750), with `error` and `scope` when a token was refused.',
    schema: { type: 'string' },
  },
};
const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

/**
 * The OpenAPI 3.1 document, generated from the route schemas, at /v1/openapi.json, and a
 * readable page for it at /docs. Each operation's `security` comes from its route's
 * `config.auth`, so the document cannot disagree with what the auth hook enforces.
 */
export async function registerOpenApi(app: FastifyInstance, config: Config): Promise<void> {
  const base = publicBaseUrl(config);
  await app.register(swagger, {
    openapi: {
      openapi: OPENAPI_VERSION,
      info: {
        title: 'Loyalty API',
        version: VERSION,
        description:
          'Referral settings, customer identities, earning rules, customers, activities, the points ledger, VIP ' +
          'tiers, points settings, points products, reward fulfillments and referrals of a merchant loyalty program, and ' +
          'the events of every change: a feed (`GET /v1/events`) and webhooks (the `webhooks` section). ' +
          'Every /v1 request carries `Authorization: Bearer <API key or OAuth access token>`. ' +
          `Scopes: ${ALL_SCOPES.map((s) => `\`${s}\` (${SCOPE_DESCRIPTIONS[s]})`).join('; ')}. ` +
          'A `:write` scope includes the `:read` scope of the same resource. ' +
          `Events are shown (in the feed, with \`event:read\`) and sent (to an app's webhook endpoints) only to a ` +
          `credential whose scopes can read their type: ${EVENT_TYPE_NAMES.map((t) => `\`${t}\` needs \`${EVENT_TYPES[t].scope}\``).join('; ')}. ` +
          `Rate limit: ${config.rateLimitPerSecond > 0 ? `${config.rateLimitPerSecond} requests per second` : 'none'} ` +
          'per credential, reported in the `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` headers.',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      servers: [{ url: base, description: 'This deployment (PUBLIC_URL)' }],
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description:
              'A merchant API key (`api_…`) or an app OAuth access token (`oa2_…`). The names listed ' +
              'with this scheme in an operation’s `security` are the scope the key must hold.',
          },
          oauth2: {
            type: 'oauth2',
            description: 'An app’s access token, from the authorization-code flow with PKCE (RFC 6749, RFC 7636).',
            flows: {
              authorizationCode: {
                authorizationUrl: `${base}/oauth2/authorize`,
                tokenUrl: `${base}/oauth2/token`,
                refreshUrl: `${base}/oauth2/token`,
                scopes: { ...SCOPE_DESCRIPTIONS },
              },
            },
          },
        },
        headers: HEADERS,
      },
      tags: [
        { name: 'Referral settings', description: 'The referral program of the account' },
        { name: 'Customer identities', description: 'Records of an external system, linked to customers' },
        { name: 'Earning rules', description: 'How customers earn points' },
        { name: 'Customers', description: 'Customers, their points balances and VIP status' },
        { name: 'Activities', description: 'What customers do, evaluated against the earning rules' },
        { name: 'Points transactions', description: 'The points ledger: every change to a balance' },
        { name: 'VIP tiers', description: 'The tiers of the all-time VIP program' },
        { name: 'Points settings', description: 'What the account calls its points' },
        { name: 'Points products', description: 'Rewards for sale for points, and their purchase' },
        { name: 'Reward fulfillments', description: 'Rewards issued to customers, with their codes' },
        { name: 'Referrals', description: 'Friends referred by customers, and the rewards of both' },
        { name: 'Events', description: 'What happened in the program: the feed of every change' },
        { name: 'Webhook endpoints', description: 'Where events are sent, their secrets and delivery logs' },
        {
          name: 'Webhooks',
          description:
            'The requests this service sends to webhook endpoints: one signed POST per event (Standard Webhooks)',
        },
        { name: 'OAuth', description: 'The authorization server apps use (RFC 6749)' },
        { name: 'Service', description: 'Health, readiness and this document' },
      ],
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transform: ({ schema, url, route }) => ({ schema: withSecurity(withDocumentedBody(schema), route), url }),
    transformObject: (document) => {
      const openapi = ('openapiObject' in document ? document.openapiObject : {}) as OpenApiDocument;
      addWebhooks(openapi);
      describeEventsByType(openapi);
      describeVariants(openapi);
      canonicalHeaderNames(openapi);
      addResponseHeaders(openapi);
      addResponseExamples(openapi);
      return openapi;
    },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: {
      // No top bar: it held Fastify's logo, a box to load any other document and a dark mode
      // whose colours fail contrast; theme.js puts the service's own header in its place.
      layout: 'BaseLayout',
      // A deep link is an <a> inside each operation's button, which screen readers cannot use.
      deepLinking: false,
    },
    staticCSP: DOCS_CSP,
    theme: DOCS_THEME,
    // Unused by BaseLayout, but without one the page's script carries Fastify's.
    logo: { type: 'image/svg+xml', content: DOCS_ICON },
  });

  app.get(
    '/v1/openapi.json',
    {
      schema: {
        operationId: 'getOpenApiDocument',
        summary: 'This OpenAPI document',
        description: 'The OpenAPI 3.1 document of the API, generated from the route schemas. Readable at /docs.',
        tags: ['Service'],
        response: {
          200: { description: 'The OpenAPI 3.1 document', type: 'object', additionalProperties: true },
          403: errorResponse(['https_required'], 'https_required: plain HTTP from a client that must use HTTPS'),
        },
      },
    },
    async () => app.swagger(),
  );
}

/** Validated body schemas, and the schema the document describes each one with instead. */
const DOCUMENTED_BODIES = new WeakMap<object, object>();

/**
 * A body schema that validates loosely, described to clients by `documented`: the OAuth endpoints
 * take every parameter as an optional string, so that the OAuth library answers as RFC 6749 5.2
 * says (`unsupported_grant_type` for another grant type, `invalid_request` for a missing
 * parameter), while the document tells a client exactly what to send.
 */
export function documentedAs<T extends object>(validated: T, documented: object): T {
  DOCUMENTED_BODIES.set(validated, documented);
  return validated;
}

function withDocumentedBody(schema: FastifySchema | undefined): FastifySchema | undefined {
  const documented = schema?.body && typeof schema.body === 'object' ? DOCUMENTED_BODIES.get(schema.body) : undefined;
  return documented ? { ...schema, body: documented } : schema;
}

/**
 * `security` from the route's `config.auth`: an API key or an access token holding the scope,
 * or the access token only; `[]` (none) for every public operation.
 */
function withSecurity(schema: FastifySchema | undefined, route: RouteOptions): FastifySchema {
  const documented = (schema ?? {}) as FastifySchema & { hide?: boolean; security?: unknown };
  if (documented.hide) return documented;
  const auth = (route.config as { auth?: RouteAuth } | undefined)?.auth;
  if (!auth) return { ...documented, security: [] };
  const oauth = { oauth2: [auth.scope] };
  return { ...documented, security: auth.accessTokenOnly ? [oauth] : [{ bearerAuth: [auth.scope] }, oauth] };
}

type Schema = Record<string, unknown>;
type Media = { schema?: Schema; example?: unknown; examples?: unknown };
type Responses = Record<string, { headers?: Record<string, unknown>; content?: Record<string, Media> }>;
type Operation = {
  operationId?: string;
  security?: unknown[];
  requestBody?: { content?: Record<string, Media> };
  responses?: Responses;
};
type OpenApiDocument = {
  paths?: Record<string, Record<string, Operation>>;
  webhooks?: Record<string, Record<string, unknown>>;
  components?: { schemas?: Record<string, Schema>; parameters?: Record<string, unknown> };
};

/** The public operations that are rate limited all the same (per client and address: oauth/routes.ts). */
const RATE_LIMITED_PUBLIC_OPERATIONS = new Set(['requestToken', 'revokeToken']);

/** A flat schema's `x-variants`: the union the document describes it as (see PointsProduct). */
type Variants = {
  by: string;
  variants: Record<string, { name: string; fields: string[]; description: string }>;
};

/**
 * A component with `x-variants` becomes a `oneOf` of one component per value of its `by` field,
 * with a discriminator: each variant fixes `by` to its value, makes its own `fields` non-null and
 * the other variants' fields null. The server keeps serialising with the flat schema (one schema
 * for every item, no branch picked per value); the variants have the same keys, narrower types.
 */
function describeVariants(document: OpenApiDocument): void {
  const schemas = document.components?.schemas ?? {};
  for (const [name, flat] of Object.entries(schemas)) {
    const spec = flat['x-variants'] as Variants | undefined;
    if (!spec) continue;
    const { 'x-variants': _, examples, description, ...shape } = flat;
    const properties = shape.properties as Record<string, Schema>;
    const mapping: Record<string, string> = {};
    for (const [value, variant] of Object.entries(spec.variants)) {
      const others = Object.values(spec.variants).flatMap((v) => (v === variant ? [] : v.fields));
      const narrowed = Object.fromEntries(
        Object.entries(properties).map(([field, property]) => {
          if (field === spec.by) return [field, { ...property, enum: [value] }];
          if (variant.fields.includes(field)) return [field, withoutNull(property)];
          if (others.includes(field)) return [field, { type: 'null', description: property.description }];
          return [field, property];
        }),
      );
      const example = (examples as Schema[] | undefined)?.find((e) => e[spec.by] === value);
      schemas[variant.name] = {
        ...shape,
        description: variant.description,
        properties: narrowed,
        ...(example ? { examples: [example] } : {}),
      };
      mapping[value] = `#/components/schemas/${variant.name}`;
    }
    schemas[name] = {
      description,
      oneOf: Object.values(mapping).map(($ref) => ({ $ref })),
      discriminator: { propertyName: spec.by, mapping },
      ...(examples ? { examples } : {}),
    };
  }
}

/**
 * The feed's `Event` as the union of the webhooks' per-type events, told apart by `type`, so a
 * generated client narrows `data` by the event's type (the route's schema keeps `data` an open
 * object: the serializer writes what the outbox stored). Runs after addWebhooks, which adds them.
 */
function describeEventsByType(document: OpenApiDocument): void {
  const schemas = document.components?.schemas;
  const event = schemas?.Event;
  if (!schemas || !event) return;
  const mapping = Object.fromEntries(
    EVENT_TYPE_NAMES.map((type) => [type, `#/components/schemas/${pascal(type)}Event`] as const),
  );
  schemas.Event = {
    description: event.description,
    oneOf: Object.values(mapping).map(($ref) => ({ $ref })),
    discriminator: { propertyName: 'type', mapping },
    ...(event.examples ? { examples: event.examples } : {}),
  };
}

/**
 * Header parameters under the names the docs write them (`Idempotency-Key`): Fastify's header
 * schemas are lower case, as Node gives headers, and a generated client typed the header
 * `idempotency-key` only. Header names are case-insensitive (RFC 9110 5.1), so only the document
 * changes.
 */
function canonicalHeaderNames(document: OpenApiDocument): void {
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item)) {
      for (const parameter of (operation as { parameters?: { in?: string; name?: string }[] }).parameters ?? []) {
        if (parameter.in !== 'header' || typeof parameter.name !== 'string') continue;
        parameter.name = parameter.name.replace(
          /(^|-)([a-z])/g,
          (_, dash: string, letter: string) => dash + letter.toUpperCase(),
        );
      }
    }
  }
}

/** A `T | null` property (an `anyOf` with a null branch) as its non-null branch. */
function withoutNull(property: Schema): Schema {
  const branches = property.anyOf as Schema[] | undefined;
  const kept = branches?.filter((branch) => branch.type !== 'null');
  if (kept?.length !== 1) return property;
  const { anyOf: _, ...rest } = property;
  return { ...rest, ...kept[0] };
}

/** An example of `schema`, put together from the examples of the components it is made of; undefined if one lacks any. */
function exampleOf(schemas: Record<string, Schema>, schema: Schema | undefined, depth = 0): unknown {
  if (!schema || depth > 8) return undefined;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if (typeof schema.$ref === 'string')
    return exampleOf(schemas, schemas[schema.$ref.split('/').pop() ?? ''], depth + 1);
  if (schema.type === 'array') {
    const item = exampleOf(schemas, schema.items as Schema, depth + 1);
    return item === undefined ? undefined : [item];
  }
  if (schema.type !== 'object' || !schema.properties) return undefined;
  const entries = Object.entries(schema.properties as Record<string, Schema>).map(([name, property]) => [
    name,
    exampleOf(schemas, property, depth + 1),
  ]);
  return entries.every(([, value]) => value !== undefined) ? Object.fromEntries(entries) : undefined;
}

/**
 * An example for every successful JSON answer that has none, put together from the examples of
 * the components it is made of, so that each example lives in one place (its component).
 */
function addResponseExamples(document: OpenApiDocument): void {
  const schemas = document.components?.schemas ?? {};
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const media = response.content?.['application/json'];
        if (!status.startsWith('2') || !media || media.example !== undefined || media.examples !== undefined) continue;
        const example = exampleOf(schemas, media.schema);
        if (example !== undefined) media.example = example;
      }
    }
  }
}

/**
 * The headers the hooks add, which no route schema names: X-Request-Id on every answer,
 * RateLimit-* on the answers of authenticated operations, Retry-After on 429 and 503, the
 * Bearer challenge on 401 and 403.
 */
function addResponseHeaders(document: OpenApiDocument): void {
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      const authenticated = (operation.security?.length ?? 0) > 0;
      const limited = authenticated || RATE_LIMITED_PUBLIC_OPERATIONS.has(operation.operationId ?? '');
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const names = ['X-Request-Id'];
        // 401 and 403 are answered before the credential's rate limit is counted.
        if (limited && status !== '401' && status !== '403') {
          names.push('RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset');
        }
        if (status === '429' || status === '503') names.push('Retry-After');
        if (authenticated && (status === '401' || status === '403')) names.push('WWW-Authenticate');
        response.headers = { ...response.headers, ...Object.fromEntries(names.map((n) => [n, headerRef(n)])) };
      }
    }
  }
}

/** The Standard Webhooks headers of every delivery (standardwebhooks.com), as components.parameters. */
const WEBHOOK_HEADERS: Record<string, { name: string; description: string; schema: Schema; example: string }> = {
  WebhookId: {
    name: 'webhook-id',
    description:
      'The event id: the same on every attempt and every resend of the event to this endpoint, so a receiver ' +
      'drops the duplicates of at-least-once delivery by it.',
    schema: { type: 'string', pattern: '^evt_[0-9A-Za-z]{20,100}$' },
    example: 'evt_3Xk9fQ2mZp8LwR4tYv6BnQ1a',
  },
  WebhookTimestamp: {
    name: 'webhook-timestamp',
    description: "This attempt's time, in seconds since 1970-01-01T00:00:00Z: refuse one far from your clock.",
    schema: { type: 'string', pattern: '^[0-9]{1,15}$' },
    example: '1767716100',
  },
  WebhookSignature: {
    name: 'webhook-signature',
    description:
      "`v1,` and the base64 of the HMAC-SHA256, keyed with the secret's bytes (the base64 after `whsec_`), of " +
      '`{webhook-id}.{webhook-timestamp}.{body}`. For 24 hours after a rotation, two signatures separated by a ' +
      "space (the new secret's and the old one's): accept the request when one of them matches.",
    schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$' },
    example: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
  },
};

/** `customer.vip_tier_changed` -> `CustomerVipTierChanged`: the names of a type's components and operation. */
const pascal = (type: string) =>
  type
    .split(/[._]/)
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join('');

/**
 * A TypeBox schema as the document holds it: each schema inside it with an `$id` (Customer,
 * RewardFulfillment, …) becomes a `$ref` to its component, added if no route brought it in, as
 * @fastify/swagger does for the routes' schemas; so webhooks and routes share one component.
 */
function documented(schema: object, schemas: Record<string, Schema>): Schema {
  const walk = (value: unknown, root: boolean): unknown => {
    if (Array.isArray(value)) return value.map((item) => walk(item, false));
    if (value === null || typeof value !== 'object') return value;
    const id = (value as { $id?: unknown }).$id;
    if (!root && typeof id === 'string') {
      if (!schemas[id]) {
        schemas[id] = {};
        schemas[id] = walk(value, true) as Schema;
      }
      return { $ref: `#/components/schemas/${id}` };
    }
    return Object.fromEntries(
      Object.entries(value)
        .filter(([key]) => key !== '$id')
        .map(([key, item]) => [key, key === 'examples' ? item : walk(item, false)]),
    );
  };
  return walk(schema, true) as Schema;
}

/**
 * The top-level `webhooks` (OpenAPI 3.1): one `post` per event type of the catalog, its body the
 * event envelope with that type's `data` (src/events/schemas.ts, made of the resources' own
 * schemas), the Standard Webhooks headers, and the scope an endpoint's maker needs for it to be sent it.
 */
function addWebhooks(document: OpenApiDocument): void {
  document.components ??= {};
  const components = document.components;
  components.schemas ??= {};
  const schemas = components.schemas;
  components.parameters = {
    ...components.parameters,
    ...Object.fromEntries(
      Object.entries(WEBHOOK_HEADERS).map(([key, header]) => [key, { in: 'header', required: true, ...header }]),
    ),
  };
  const failed =
    'A failed attempt, as is any answer but a 2xx within 10 seconds (redirects are not followed): retried after ' +
    '5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (each with up to 10 % jitter), then the delivery is `failed`.';
  document.webhooks = Object.fromEntries(
    EVENT_TYPE_NAMES.map((type: EventType) => {
      const name = `${pascal(type)}Event`;
      schemas[name] = documented(eventOf(type), schemas);
      const data = exampleOf(schemas, documented(EVENT_DATA[type], schemas));
      const example =
        data === undefined
          ? undefined
          : {
              id: WEBHOOK_HEADERS.WebhookId!.example,
              type,
              account_id: 1,
              created_at: '2026-01-06T09:15:00.000Z',
              data,
            };
      const { scope, description } = EVENT_TYPES[type];
      const who =
        type === 'ping'
          ? 'Sent only on request (`POST /v1/webhook_endpoints/{id}/test`), to that one endpoint; no endpoint subscribes to it.'
          : `Sent to every enabled endpoint whose \`enabled_events\` name \`${type}\` or \`*\` and whose maker ` +
            `(an API key or an app's access token; not the console nor the CLI) held \`${scope}\`.`;
      const operation = {
        operationId: `on${pascal(type)}`,
        summary: `\`${type}\`: ${description}`,
        description:
          `${who} In the feed (\`GET /v1/events\`), a credential sees it with \`event:read\` and \`${scope}\`. ` +
          'The body is the event, `data` exactly as the API showed the resource at the change; verify the ' +
          '`webhook-signature` over the raw body before parsing it.',
        tags: ['Webhooks'],
        security: [],
        parameters: Object.keys(WEBHOOK_HEADERS).map((key) => ({ $ref: `#/components/parameters/${key}` })),
        requestBody: {
          required: true,
          description: `The \`${type}\` event, sent with \`User-Agent: loyalty-webhooks/<version>\``,
          content: {
            'application/json': {
              schema: { $ref: `#/components/schemas/${name}` },
              ...(example === undefined ? {} : { example }),
            },
          },
        },
        responses: {
          '2XX': { description: 'Received: the delivery succeeded and is never sent again (unless resent by hand)' },
          '4XX': { description: failed },
          '5XX': { description: failed },
        },
      };
      return [type, { post: operation }];
    }),
  );
}
