/**
 * Every request of the webhook endpoint routes that reads, changes or sends to endpoint `id`
 * (resending the event `eventId` to it): what a credential that must not reach the endpoint is
 * refused, `404` each.
 */
export function requestsOfEndpoint(id: number, eventId: string) {
  const path = `/v1/webhook_endpoints/${id}`;
  return [
    ['GET', path, undefined],
    ['PATCH', path, { webhook_endpoint: { url: 'https://attacker.example/' } }],
    ['DELETE', path, undefined],
    ['POST', `${path}/rotate_secret`, undefined],
    ['POST', `${path}/test`, undefined],
    ['GET', `${path}/deliveries`, undefined],
    ['POST', `/v1/events/${eventId}/resend`, { webhook_endpoint_id: id }],
  ] as const;
}
