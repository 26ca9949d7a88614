import type { Command } from 'commander';
import type { WebhookDelivery, WebhookEndpoint } from '../../webhooks/schemas.js';
import type { EndpointOwner } from '../../webhooks/service.js';
import { lines, pageLimit, parseId, run } from '../context.js';
import { addWebhooksListenCommand } from './webhooks-listen.js';

interface FieldOptions {
  url?: string;
  events?: string;
  description?: string;
  status?: string;
}

/** The account's own endpoint (no app's, nothing narrowed): what the merchant's command line makes. */
const merchant = (account: string): EndpointOwner => ({
  accountId: parseId(account, 'account'),
  grantId: null,
  scopes: null,
});

/** `--events "a,b"` (or space-separated) as the list the API takes. */
const eventList = (events: string) => events.split(/[\s,]+/).filter(Boolean);

/** The `webhook_endpoint` object of the fields given. */
function fields(opts: FieldOptions): Record<string, unknown> {
  return {
    ...(opts.url === undefined ? {} : { url: opts.url }),
    ...(opts.description === undefined ? {} : { description: opts.description }),
    ...(opts.events === undefined ? {} : { enabled_events: eventList(opts.events) }),
    ...(opts.status === undefined ? {} : { status: opts.status }),
  };
}

/**
 * `loyalty webhooks create | list | update | delete | rotate-secret | test | deliveries | resend`,
 * on the service the API uses; `--json` prints the API's answer.
 */
export function registerWebhookCommands(program: Command): void {
  const webhooks = program
    .command('webhooks')
    .description(
      "an account's webhook endpoints, which are sent its events signed with their secret (shown once, on " +
        'create and rotate-secret). Only https:// addresses of the public internet, unless ' +
        'WEBHOOK_ALLOW_PRIVATE_NETWORKS=true (tests and private deployments only).',
    );
  addWebhooksListenCommand(webhooks);
  webhooks
    .command('create')
    .description('add an endpoint; prints its signing secret, this once')
    .requiredOption('--account <id>', 'the account')
    .requiredOption('--url <url>', 'where to send events (https://, at most 2,048 characters)')
    .option('--events <types>', 'event types, comma-separated, or * for all', '*')
    .option('--description <text>', 'what to call it (at most 1,000 characters)')
    .action((opts: FieldOptions & { account: string }, cmd: Command) =>
      run(
        cmd,
        async ({ services }) => ({
          webhook_endpoint: await services.webhooks.create(merchant(opts.account), fields(opts)),
        }),
        ({ webhook_endpoint: e }) =>
          `${endpointText(e)}\nsecret:  ${e.secret}\n(the secret is shown this once: keep it to verify signatures)`,
      ),
    );
  webhooks
    .command('list')
    .description("list an account's endpoints, newest first (never their secrets)")
    .requiredOption('--account <id>', 'the account')
    .action((opts: { account: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) => services.webhooks.list(parseId(opts.account, 'account'), { limit: 250 }),
        (page) => page.webhook_endpoints.map(endpointLine).join('\n') || '(no webhook endpoints)',
      ),
    );
  webhooks
    .command('update')
    .description('change an endpoint (the fields given); --status disabled stops its deliveries, enabled resumes them')
    .argument('<id>', 'the endpoint id')
    .requiredOption('--account <id>', 'the account')
    .option('--url <url>', 'where to send events')
    .option('--events <types>', 'event types, comma-separated, or * for all')
    .option('--description <text>', 'what to call it')
    .option('--status <status>', 'enabled or disabled')
    .action((id: string, opts: FieldOptions & { account: string }, cmd: Command) =>
      run(
        cmd,
        async ({ services }) => ({
          webhook_endpoint: await services.webhooks.update(merchant(opts.account), parseId(id), fields(opts)),
        }),
        ({ webhook_endpoint: e }) => endpointText(e),
      ),
    );
  webhooks
    .command('delete')
    .description('delete an endpoint, its delivery log and its pending deliveries')
    .argument('<id>', 'the endpoint id')
    .requiredOption('--account <id>', 'the account')
    .action((id: string, opts: { account: string }, cmd: Command) =>
      run(
        cmd,
        async ({ services }) => {
          await services.webhooks.delete(parseId(opts.account, 'account'), parseId(id));
          return { deleted: true };
        },
        () => `webhook endpoint ${id} deleted`,
      ),
    );
  webhooks
    .command('rotate-secret')
    .description('replace the signing secret (printed this once); the old one keeps signing for 24 hours')
    .argument('<id>', 'the endpoint id')
    .requiredOption('--account <id>', 'the account')
    .action((id: string, opts: { account: string }, cmd: Command) =>
      run(
        cmd,
        async ({ services }) => ({
          webhook_endpoint: await services.webhooks.rotateSecret(parseId(opts.account, 'account'), parseId(id)),
        }),
        ({ webhook_endpoint: e }) =>
          `new secret of webhook endpoint ${e.id}: ${e.secret}\n(the old secret keeps signing beside it for 24 hours)`,
      ),
    );
  webhooks
    .command('test')
    .description('send a test event (ping) to an endpoint; see it with `webhooks deliveries`')
    .argument('<id>', 'the endpoint id')
    .requiredOption('--account <id>', 'the account')
    .action((id: string, opts: { account: string }, cmd: Command) =>
      run(
        cmd,
        async ({ services }) => ({
          event: await services.webhooks.sendTest(parseId(opts.account, 'account'), parseId(id)),
        }),
        ({ event }) => `test event ${event.id} queued for webhook endpoint ${id}`,
      ),
    );
  webhooks
    .command('deliveries')
    .description(
      "an endpoint's delivery attempts, newest first, each with what followed it: delivered, retry due at <time>, " +
        "retried, failed: no more retries, or retry paused (endpoint disabled); a resend's attempts say (resend)",
    )
    .argument('<id>', 'the endpoint id')
    .requiredOption('--account <id>', 'the account')
    .option('--event <evt_id>', 'only the attempts of this event')
    .option('--limit <n>', 'most attempts to show, 1 to 250', '50')
    .option('--cursor <cursor>', 'next_cursor or previous_cursor of an earlier --json answer')
    .action((id: string, opts: { account: string; event?: string; limit: string; cursor?: string }, cmd: Command) =>
      run(
        cmd,
        ({ services }) =>
          services.webhooks.deliveries(parseId(opts.account, 'account'), parseId(id), {
            limit: pageLimit(opts.limit),
            ...(opts.cursor === undefined ? {} : { cursor: opts.cursor }),
            ...(opts.event === undefined ? {} : { event_id: opts.event }),
          }),
        (page) => page.webhook_deliveries.map(deliveryLine).join('\n') || '(no delivery attempts)',
      ),
    );
  webhooks
    .command('resend')
    .description('send an event to an endpoint again, as a new delivery (any event of the account)')
    .requiredOption('--account <id>', 'the account')
    .requiredOption('--event <evt_id>', 'the event (evt_…)')
    .requiredOption('--endpoint <id>', 'the endpoint')
    .action((opts: { account: string; event: string; endpoint: string }, cmd: Command) =>
      run(
        cmd,
        async ({ services }) => {
          const endpointId = parseId(opts.endpoint, 'endpoint');
          await services.webhooks.resend(parseId(opts.account, 'account'), opts.event, endpointId);
          return { event_id: opts.event, webhook_endpoint_id: endpointId, queued: true };
        },
        (r) => `event ${r.event_id} queued for webhook endpoint ${r.webhook_endpoint_id}`,
      ),
    );
}

function endpointText(e: WebhookEndpoint): string {
  return lines({
    id: e.id,
    url: e.url,
    status: e.status,
    events: e.enabled_events.join(', '),
    description: e.description || '-',
  });
}

function endpointLine(e: WebhookEndpoint): string {
  return [e.id, e.status, e.url, e.enabled_events.join(','), e.description || '-'].join('\t');
}

function deliveryLine(d: WebhookDelivery): string {
  const answer = d.status_code === null ? (d.error ?? 'no answer') : `HTTP ${d.status_code}`;
  const attempt = d.trigger === 'resend' ? `attempt ${d.attempt} (resend)` : `attempt ${d.attempt}`;
  return [d.created_at, d.event_id, d.event_type, attempt, answer, `${d.duration_ms} ms`, followUpText(d)].join('\t');
}

/** What followed an attempt, as the console says it. */
function followUpText(d: WebhookDelivery): string {
  switch (d.outcome) {
    case 'succeeded':
      return 'delivered';
    case 'retry_due':
      return `retry due at ${d.next_attempt_at}`;
    case 'retried':
      return 'retried';
    case 'failed':
      return 'failed: no more retries';
    case 'paused':
      return 'retry paused: the endpoint is disabled';
  }
}
