import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { ALL_SCOPES, SCOPE_DESCRIPTIONS } from '../auth/scopes.js';
import { ErrorBody } from './schemas.js';

/**
 * The OpenAPI 3 document, generated from the route schemas, at /v1/openapi.json, and a
 * readable page for it at /docs.
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  app.addSchema(ErrorBody);
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Loyalty API',
        version: '1.0.0',
        description:
          'Referral settings, customer identities and earning rules of a merchant loyalty program. ' +
          'Every request carries `Authorization: Bearer <API key or OAuth access token>`. ' +
          `Scopes: ${ALL_SCOPES.map((s) => `\`${s}\` (${SCOPE_DESCRIPTIONS[s]})`).join('; ')}. ` +
          'A `:write` scope includes the `:read` scope of the same resource. ' +
          'Rate limit: 10 requests per second per credential by default, reported in the ' +
          '`RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` headers.',
      },
      servers: [{ url: '/' }],
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description: 'A merchant API key (`api_…`) or an app OAuth access token (`oa2_…`).',
          },
        },
      },
      tags: [
        { name: 'Referral settings' },
        { name: 'Customer identities' },
        { name: 'Earning rules' },
        { name: 'Service', description: 'Health, readiness and this document' },
      ],
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { url: '/v1/openapi.json' } as object });

  app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
