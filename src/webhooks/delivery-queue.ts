/** The queue of webhook deliveries: one job per (event, endpoint), grouped by endpoint. */
export const WEBHOOK_DELIVERY_QUEUE = 'webhook_delivery';

/** The job group of an endpoint's deliveries (at most 10 of them in flight at once). */
export const endpointGroup = (endpointId: number) => `webhook_endpoint:${endpointId}`;
