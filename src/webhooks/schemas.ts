import { type Static, Type } from 'typebox';
import { Id, NO_NUL, StringEnum, Timestamp } from '../common-schemas.js';
import { EVENT_TYPE_NAMES } from '../events/catalog.js';
import { PageMetadata, pageParams } from '../pagination/schemas.js';
import { MAX_WEBHOOK_URL_LENGTH } from './destination.js';

/** The longest description of an endpoint (what the merchant calls it). */
export const MAX_DESCRIPTION_LENGTH = 1000;
/** The most endpoints an account may have (the events contract). */
export const MAX_ENDPOINTS_PER_ACCOUNT = 20;
/** Every event type an endpoint may name: `ping` is sent on request only, never subscribed to. */
export const SUBSCRIBABLE_EVENT_TYPES = EVENT_TYPE_NAMES.filter((type) => type !== 'ping');

const EXAMPLE_ENDPOINT = {
  id: 3,
  url: 'https://store.example/webhooks/loyalty',
  description: 'Checkout: create discount codes',
  enabled_events: ['points_purchase.created', 'reward_fulfillment.updated'],
  status: 'enabled',
  created_at: '2026-01-05T16:30:00.000Z',
  updated_at: '2026-01-05T16:30:00.000Z',
};
const EXAMPLE_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw/4kO3WH6N1M=';

const endpointFields = {
  id: Type.Integer({ description: 'Identifier of the endpoint' }),
  url: Type.String({ description: 'Where events are sent (https://)' }),
  description: Type.String({ description: 'What the merchant calls it; "" when none' }),
  enabled_events: Type.Array(Type.String(), {
    description:
      'The event types sent to it, or `["*"]` for all. It receives only the types the scopes of the credential ' +
      'that made it can read, whatever it names.',
  }),
  status: StringEnum(['enabled', 'disabled'], 'Disabled endpoints are sent nothing; their pending deliveries wait'),
  created_at: Timestamp('When the endpoint was made'),
  updated_at: Timestamp('When it last changed'),
};

/** A webhook endpoint as the API answers it: never its secret (shown on create and rotate only). */
export const WebhookEndpoint = Type.Object(endpointFields, {
  $id: 'WebhookEndpoint',
  description: "Where events are sent, signed with the endpoint's secret (the Standard Webhooks scheme)",
  examples: [EXAMPLE_ENDPOINT],
});
export type WebhookEndpoint = Static<typeof WebhookEndpoint>;

/** The answer of create and rotate_secret: the one time the secret is shown. */
export const WebhookEndpointWithSecret = Type.Object(
  {
    ...endpointFields,
    secret: Type.String({
      description:
        'The signing secret: `whsec_` and the base64 of 32 random bytes. Shown only in this answer; keep it to ' +
        'verify the `webhook-signature` header.',
    }),
  },
  {
    $id: 'WebhookEndpointWithSecret',
    description: 'A webhook endpoint with its signing secret, shown this once',
    examples: [{ ...EXAMPLE_ENDPOINT, secret: EXAMPLE_SECRET }],
  },
);
export type WebhookEndpointWithSecret = Static<typeof WebhookEndpointWithSecret>;

const EnabledEvents = Type.Array(StringEnum([...SUBSCRIBABLE_EVENT_TYPES, '*']), {
  minItems: 1,
  maxItems: 100,
  description: `Event types to send (${SUBSCRIBABLE_EVENT_TYPES.join(', ')}), or \`["*"]\` alone for all of them`,
});

const inputFields = {
  url: Type.String({
    minLength: 1,
    maxLength: MAX_WEBHOOK_URL_LENGTH,
    pattern: NO_NUL,
    description:
      'https:// only, at most 2,048 characters, no credentials; its host may not be a loopback, private, ' +
      'link-local, CGNAT, unspecified, multicast or broadcast address (IPv4-compatible IPv6 forms included), ' +
      'nor its port 0 or a well-known port of another protocol (22, 25, 6379, …: see the docs)',
  }),
  description: Type.Optional(
    Type.String({ maxLength: MAX_DESCRIPTION_LENGTH, pattern: NO_NUL, description: 'What to call it (default "")' }),
  ),
  enabled_events: EnabledEvents,
  status: Type.Optional(StringEnum(['enabled', 'disabled'], 'enabled (default) or disabled')),
};

/** What `POST /v1/webhook_endpoints` takes under `webhook_endpoint` (and the CLI, the console). */
export const WebhookEndpointInput = Type.Object(inputFields, { additionalProperties: false });
export type WebhookEndpointInput = Static<typeof WebhookEndpointInput>;

/** What `PATCH /v1/webhook_endpoints/{id}` takes: any of the fields. */
export const WebhookEndpointChange = Type.Partial(WebhookEndpointInput, { additionalProperties: false });
export type WebhookEndpointChange = Static<typeof WebhookEndpointChange>;

export const CreateWebhookEndpointBody = Type.Object(
  { webhook_endpoint: WebhookEndpointInput },
  {
    additionalProperties: false,
    examples: [
      {
        webhook_endpoint: {
          url: EXAMPLE_ENDPOINT.url,
          description: EXAMPLE_ENDPOINT.description,
          enabled_events: EXAMPLE_ENDPOINT.enabled_events,
        },
      },
    ],
  },
);

export const UpdateWebhookEndpointBody = Type.Object(
  { webhook_endpoint: WebhookEndpointChange },
  { additionalProperties: false, examples: [{ webhook_endpoint: { status: 'disabled' } }] },
);

export const WebhookEndpointResponse = Type.Object({ webhook_endpoint: WebhookEndpoint });
export const WebhookEndpointWithSecretResponse = Type.Object({ webhook_endpoint: WebhookEndpointWithSecret });

export const WebhookEndpointsPage = Type.Object(
  { webhook_endpoints: Type.Array(WebhookEndpoint), metadata: PageMetadata },
  { description: 'A page of webhook endpoints, id descending' },
);
export type WebhookEndpointsPage = Static<typeof WebhookEndpointsPage>;

export const WebhookEndpointsQuery = Type.Object({ ...pageParams('webhook endpoints') });
export type WebhookEndpointsQuery = Static<typeof WebhookEndpointsQuery>;

export const WebhookEndpointParams = Type.Object({ id: Id('Identifier of the webhook endpoint') });

/** An event's public id (`evt_…`), as a path or query parameter. */
export const EventId = (description: string) =>
  Type.String({ pattern: '^evt_[0-9A-Za-z]{1,64}$', maxLength: 68, description });

/** What followed an attempt (WebhookDelivery's `outcome`). */
export const DELIVERY_OUTCOMES = ['succeeded', 'retry_due', 'retried', 'failed', 'paused'] as const;
export type DeliveryOutcome = (typeof DELIVERY_OUTCOMES)[number];

/** One attempt to deliver an event to an endpoint: the delivery log. */
export const WebhookDelivery = Type.Object(
  {
    id: Type.Integer({ description: 'Identifier of the attempt' }),
    event_id: Type.String({ description: 'The event sent (`evt_…`), the `webhook-id` header of the request' }),
    event_type: Type.String({ description: "The event's type" }),
    attempt: Type.Integer({
      description:
        'Which attempt of its delivery, from 1. A resend is a new delivery, numbered from 1 again: its attempts ' +
        'have `trigger` `resend`',
    }),
    status_code: Type.Union([Type.Integer(), Type.Null()], {
      description: "The receiver's HTTP status, or null when no answer came (see error)",
    }),
    error: Type.Union([Type.String(), Type.Null()], {
      description: 'Why the attempt failed without an answer, or with a non-2xx one; null on success',
    }),
    duration_ms: Type.Integer({ description: 'How long the attempt took, in milliseconds' }),
    response_body: Type.String({ description: "The first 1 KiB of the receiver's answer" }),
    created_at: Timestamp('When the attempt was made'),
    trigger: StringEnum(
      ['event', 'resend'],
      "What made this attempt's delivery: `event`, the event itself (sent to each endpoint subscribed to its " +
        'type, or a test event to its endpoint); `resend`, a resend by hand (`POST /v1/events/{id}/resend`, ' +
        '`loyalty webhooks resend`, the console)',
    ),
    outcome: StringEnum(
      [...DELIVERY_OUTCOMES],
      'What followed the attempt: `succeeded` (a 2xx answer: the delivery is done); `retry_due` (it failed and ' +
        'the delivery is tried again at `next_attempt_at`); `retried` (it failed and a later attempt of the ' +
        'delivery followed); `failed` (it failed and the retries ran out: the delivery failed, and is not tried ' +
        'again unless resent); `paused` (it failed and the endpoint is disabled: the retry waits until it is ' +
        'enabled again)',
    ),
    next_attempt_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description:
        'When the delivery is tried again after this failed attempt (`outcome` `retry_due`): the time its retry ' +
        'is due, up to 10 % later than the retry schedule says (jitter), or now while that retry is under way. ' +
        'Null for every other outcome: the attempt succeeded, a later attempt followed, the retries ran out, or ' +
        'the endpoint is disabled',
    }),
  },
  {
    $id: 'WebhookDelivery',
    description: 'One attempt to deliver an event to an endpoint, kept as long as the event',
    examples: [
      {
        id: 81,
        event_id: 'evt_4bX9zQpL2mN7rT5vW8yK1cD3',
        event_type: 'points_purchase.created',
        attempt: 2,
        status_code: 503,
        error: null,
        duration_ms: 42,
        response_body: 'busy',
        created_at: '2026-01-05T16:30:01.000Z',
        trigger: 'event',
        outcome: 'retry_due',
        next_attempt_at: '2026-01-05T16:35:01.000Z',
      },
    ],
  },
);
export type WebhookDelivery = Static<typeof WebhookDelivery>;

export const WebhookDeliveriesPage = Type.Object(
  { webhook_deliveries: Type.Array(WebhookDelivery), metadata: PageMetadata },
  { description: 'A page of delivery attempts, newest first' },
);
export type WebhookDeliveriesPage = Static<typeof WebhookDeliveriesPage>;

export const WebhookDeliveriesQuery = Type.Object({
  ...pageParams('delivery attempts'),
  event_id: Type.Optional(EventId('Only the attempts of this event (`evt_…`)')),
});
export type WebhookDeliveriesQuery = Static<typeof WebhookDeliveriesQuery>;

/** An event as the API shows it (the test event's answer). */
export const EventJson = Type.Object(
  {
    id: Type.String({ description: '`evt_` and random base62 characters' }),
    type: Type.String({ description: 'The event type' }),
    account_id: Type.Integer(),
    created_at: Timestamp('When it happened'),
    data: Type.Object({}, { additionalProperties: true, description: 'The resource, under its usual key' }),
  },
  {
    description: 'An event',
    examples: [
      {
        id: 'evt_4bX9zQpL2mN7rT5vW8yK1cD3',
        type: 'ping',
        account_id: 1,
        created_at: '2026-01-05T16:30:00.000Z',
        data: {},
      },
    ],
  },
);
export type EventJson = Static<typeof EventJson>;

export const EventResponse = Type.Object({ event: EventJson });

export const ResendParams = Type.Object({ id: EventId('The event to send again (`evt_…`)') });

export const ResendBody = Type.Object(
  { webhook_endpoint_id: Id('The endpoint to send it to') },
  { additionalProperties: false, examples: [{ webhook_endpoint_id: 3 }] },
);
