import { invalidParameter } from './errors.js';

/** An ISO 8601 date-time (checked by the schema) as epoch ms; `400` naming `field` if it names no instant. */
export function parseTime(value: string, field: string): number {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw invalidParameter(field, 'must be an ISO 8601 date-time that names an instant');
  return ms;
}
