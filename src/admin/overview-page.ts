import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { isRunning } from '../referrals/service.js';
import { sendPage } from './pages.js';

/** The overview: the program's figures (points, referrals, webhooks), and where to go next. */
const overviewPage: FastifyPluginAsyncTypebox = async (app) => {
  const { admin, pointsSettings, webhooks, referrals, referralSettings } = app.services;
  app.get('/overview', { schema: { hide: true } }, async (request, reply) => {
    const { accountId } = request.console!.user;
    const [figures, labels, endpoints, referral, program] = await Promise.all([
      admin.figures(accountId),
      pointsSettings.get(accountId),
      webhooks.summary(accountId),
      referrals.figures(accountId),
      referralSettings.program(accountId),
    ]);
    return sendPage(reply, request, 200, 'overview', {
      title: 'Overview',
      figures,
      labels: labels.points_label,
      endpoints,
      referral,
      referralProgram: program === undefined ? 'none' : isRunning(program) ? 'running' : 'stopped',
    });
  });
};

export default overviewPage;
