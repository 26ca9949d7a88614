import { invalidParameter } from './errors.js';

/** A day in milliseconds (UTC days: no summer time). */
export const DAY_MS = 86_400_000;

/** An ISO 8601 date-time (checked by the schema) as epoch ms; `400` naming `field` if it names no instant. */
export function parseTime(value: string, field: string): number {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw invalidParameter(field, 'must be an ISO 8601 date-time that names an instant');
  return ms;
}
