import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { sendPage } from './pages.js';

/** The overview: the program's figures, and where to go next. */
const overviewPage: FastifyPluginAsyncTypebox = async (app) => {
  const { admin, pointsSettings, webhooks } = app.services;
  app.get('/overview', { schema: { hide: true } }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const [figures, labels, endpoints] = await Promise.all([
      admin.figures(accountId),
      pointsSettings.get(accountId),
      webhooks.summary(accountId),
    ]);
    return sendPage(reply, request, 200, 'overview', {
      title: 'Overview',
      figures,
      labels: labels.points_label,
      endpoints,
    });
  });
};

export default overviewPage;
