// The body of a reschedule (POST /api/queues/{queue}/messages/{id}/reschedule): exactly one of `delaySeconds`
// (from the database clock, like a delayed publish) or `availableAt` (an ISO 8601 instant with a zone).

import type { FieldError } from '../validation';
import type { RescheduleTime } from './job-control';
import { MAX_DELAY_SECONDS } from './publish-request';

export type ParsedReschedule = { ok: true; when: RescheduleTime } | { ok: false; detail: string; errors: FieldError[] };

/** An instant with a date, a time and a zone (Z or ±hh:mm), so no server's local zone is guessed. */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;
/** datetime2 and timestamptz both hold these years; the DATEADD split of a delay holds 3650 days. */
const MIN_YEAR = 1970;
const MAX_YEAR = 9999;

export function parseRescheduleBody(value: unknown): ParsedReschedule {
  const fail = (errors: FieldError[]): ParsedReschedule => ({ ok: false, detail: 'the reschedule body is invalid', errors });
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return fail([{ field: '', message: 'must be an object: { delaySeconds } or { availableAt }' }]);
  const body = value as Record<string, unknown>;
  const unknown = Object.keys(body).filter((k) => k !== 'delaySeconds' && k !== 'availableAt');
  if (unknown.length > 0) return fail(unknown.map((k) => ({ field: k, message: 'is not a known field (delaySeconds, availableAt)' })));
  const hasDelay = body.delaySeconds !== undefined;
  const hasAt = body.availableAt !== undefined;
  if (hasDelay === hasAt) return fail([{ field: '', message: 'give exactly one of delaySeconds and availableAt' }]);
  if (hasDelay) {
    const d = body.delaySeconds;
    if (typeof d !== 'number' || !Number.isFinite(d) || d < 0 || d > MAX_DELAY_SECONDS) {
      return fail([{ field: 'delaySeconds', message: `must be a number from 0 to ${MAX_DELAY_SECONDS} (3650 days)` }]);
    }
    return { ok: true, when: { delayMs: Math.round(d * 1000) } };
  }
  const at = body.availableAt;
  const instant = typeof at === 'string' && INSTANT.test(at) ? new Date(at) : undefined;
  if (instant === undefined || Number.isNaN(instant.getTime()) || instant.getUTCFullYear() < MIN_YEAR || instant.getUTCFullYear() > MAX_YEAR) {
    return fail([{ field: 'availableAt', message: `must be an ISO 8601 instant with a zone (e.g. 2026-12-24T18:00:00Z), years ${MIN_YEAR}–${MAX_YEAR}` }]);
  }
  return { ok: true, when: { availableAt: instant } };
}
