import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireDecimalLimit } from '../http/pagination.js';
import { authErrorResponses, badRequestResponse, notFoundOf } from '../http/schemas.js';
import { CustomerParams, CustomerQuery, CustomerResponse, CustomersPage, CustomersQuery } from './schemas.js';

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/v1/customers',
    {
      config: { auth: { scope: 'customer:read' } },
      preValidation: requireDecimalLimit,
      schema: {
        operationId: 'listCustomers',
        summary: 'List the customers of the account, newest first',
        description:
          'Keyset pages in `id` descending order, with the cursors of every list. Filters: `email` (matched ' +
          'case-insensitively after trimming, as create_or_update matches), `state`, `updated_at_min`. A cursor ' +
          'carries its filters: sending it with other filters is `400 invalid_cursor`.',
        tags: ['Customers'],
        querystring: CustomersQuery,
        response: { 200: CustomersPage, 400: badRequestResponse, ...authErrorResponses },
      },
    },
    async (request) => app.services.customers.page(request.credential!.accountId, request.query),
  );

  app.get(
    '/v1/customers/:id',
    {
      config: { auth: { scope: 'customer:read' } },
      schema: {
        operationId: 'getCustomer',
        summary: 'Retrieve a customer, with points balance and VIP status',
        description: "An id the account does not have (another account's included) is `404 not_found`.",
        tags: ['Customers'],
        params: CustomerParams,
        querystring: CustomerQuery,
        response: {
          200: { ...CustomerResponse, description: 'The customer' },
          400: badRequestResponse,
          404: notFoundOf('customer'),
          ...authErrorResponses,
        },
      },
    },
    async (request) => ({
      customer: await app.services.customers.get(request.credential!.accountId, request.params.id),
    }),
  );
};

export default routes;
