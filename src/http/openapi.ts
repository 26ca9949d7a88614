import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';
import { ALL_SCOPES, SCOPE_DESCRIPTIONS } from '../auth/scopes.js';
import { type Config, publicBaseUrl } from '../config.js';
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
        version: '1.0.0',
        description:
          'Referral settings, customer identities, earning rules, customers, activities, the points ledger, VIP ' +
          'tiers, points settings, points products and reward fulfillments of a merchant loyalty program. ' +
          'Every /v1 request carries `Authorization: Bearer <API key or OAuth access token>`. ' +
          `Scopes: ${ALL_SCOPES.map((s) => `\`${s}\` (${SCOPE_DESCRIPTIONS[s]})`).join('; ')}. ` +
          'A `:write` scope includes the `:read` scope of the same resource. ' +
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
        { name: 'OAuth', description: 'The authorization server apps use (RFC 6749)' },
        { name: 'Service', description: 'Health, readiness and this document' },
      ],
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transform: ({ schema, url, route }) => ({ schema: withSecurity(withDocumentedBody(schema), route), url }),
    transformObject: (document) => {
      const openapi = ('openapiObject' in document ? document.openapiObject : {}) as OpenApiDocument;
      describeVariants(openapi);
      addResponseHeaders(openapi);
      addResponseExamples(openapi);
      return openapi;
    },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { url: '/v1/openapi.json' } as object,
    staticCSP: DOCS_CSP,
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
  components?: { schemas?: Record<string, Schema> };
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

/** A `T | null` property (an `anyOf` with a null branch) as its non-null branch. */
function withoutNull(property: Schema): Schema {
  const branches = property.anyOf as Schema[] | undefined;
  const kept = branches?.filter((branch) => branch.type !== 'null');
  if (kept?.length !== 1) return property;
  const { anyOf: _, ...rest } = property;
  return { ...rest, ...kept[0] };
}

/**
 * An example for every successful JSON answer that has none, put together from the examples of
 * the components it is made of, so that each example lives in one place (its component).
 */
function addResponseExamples(document: OpenApiDocument): void {
  const schemas = document.components?.schemas ?? {};
  const exampleOf = (schema: Schema | undefined, depth = 0): unknown => {
    if (!schema || depth > 8) return undefined;
    if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
    if (typeof schema.$ref === 'string') return exampleOf(schemas[schema.$ref.split('/').pop() ?? ''], depth + 1);
    if (schema.type === 'array') {
      const item = exampleOf(schema.items as Schema, depth + 1);
      return item === undefined ? undefined : [item];
    }
    if (schema.type !== 'object' || !schema.properties) return undefined;
    const entries = Object.entries(schema.properties as Record<string, Schema>).map(([name, property]) => [
      name,
      exampleOf(property, depth + 1),
    ]);
    return entries.every(([, value]) => value !== undefined) ? Object.fromEntries(entries) : undefined;
  };
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const media = response.content?.['application/json'];
        if (!status.startsWith('2') || !media || media.example !== undefined || media.examples !== undefined) continue;
        const example = exampleOf(media.schema);
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
