import { randomUUID } from 'node:crypto';
import { correlationIdProblem, isWellFormedUtf16 } from '../correlation-id';
import { payloadText } from '../json/raw-json';
import type { JsonPath } from '../json/scan';
import { UUID_PATTERN, type FieldError } from '../validation';
import { DEDUP_MODES, EXPIRES_AT_HEADER, MAX_DEDUP_KEY_CHARS, MAX_DEDUP_WINDOW_SECONDS } from './dedup';
import { CORRELATION_ID_HEADER, type DedupMode, type Headers, type OutgoingMessage } from './types';

export const MAX_BATCH = 100;
export const MAX_DELAY_SECONDS = 3650 * 86400;
const MAX_HEADERS = 64;
/** All headers of one message as stored (JSON, UTF-8): they travel with every claim and dead letter. */
export const MAX_HEADERS_BYTES = 16 * 1024;
// C0 controls and DEL; a tab is allowed in values only
const CONTROL_IN_NAME = /[\u0000-\u001f\u007f]/;
const CONTROL_IN_VALUE = /[\u0000-\u0008\u000a-\u001f\u007f]/;

const FIELDS = ['payload', 'id', 'correlationId', 'headers', 'delaySeconds', 'priority', 'dedupKey', 'dedupWindowSeconds', 'dedupMode', 'orderingKey', 'expiresAt', 'ttlSeconds'];
/** A job's priority fits the column (smallint); higher is claimed first. */
export const MIN_PRIORITY = -32768;
export const MAX_PRIORITY = 32767;
const DEDUP_FIELDS = ['dedupKey', 'dedupWindowSeconds', 'dedupMode'];
/** An ordering key's length bound (the SQL Server column is nvarchar(200)). */
export const MAX_ORDERING_KEY_CHARS = 200;
// an instant with an explicit zone (Z or ±hh:mm), as the reschedule route takes it
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

export interface PublishParseOptions {
  /** Dedup and ordering keys are a queue publish's (a topic publish refuses them). Default true. */
  dedup?: boolean;
  /** epoch ms: the clock ttlSeconds counts from and expiresAt must be after (the app's). */
  now?: () => number;
}

export type ParsedPublish =
  | { ok: true; messages: OutgoingMessage[]; batch: boolean }
  | { ok: false; status: 400 | 413; detail: string; errors: FieldError[] };

/** Where a publish body holds payloads: read them as RawJson (readJsonBody's rawAt), so they are stored as sent. */
export function isPublishPayloadPath(path: JsonPath): boolean {
  return (path.length === 1 && path[0] === 'payload') || (path.length === 2 && typeof path[0] === 'number' && path[1] === 'payload');
}

/**
 * Validates a publish body (one message object or an array of ≤ 100) into rows to insert. Every problem is
 * reported with its field path; nothing is written unless the whole request is valid. A payload given as
 * RawJson is stored as that text; any other value is serialised.
 */
export function parsePublishBody(
  body: unknown,
  queue: string,
  maxMessageBytes: number,
  newId: () => string = randomUUID,
  options: PublishParseOptions = {},
): ParsedPublish {
  const allowDedup = options.dedup ?? true;
  const nowMs = (options.now ?? Date.now)();
  const batch = Array.isArray(body);
  const items: unknown[] = batch ? (body as unknown[]) : [body];
  if (batch && items.length === 0) return fail(400, 'the batch is empty', [{ field: '', message: 'must contain at least one message' }]);
  if (items.length > MAX_BATCH) {
    return fail(400, `a batch holds at most ${MAX_BATCH} messages`, [{ field: '', message: `has ${items.length} messages` }]);
  }
  const errors: FieldError[] = [];
  const tooLarge: FieldError[] = [];
  const messages: OutgoingMessage[] = [];
  const seen = new Set<string>();
  items.forEach((item, index) => {
    const at = (f: string) => (batch ? `[${index}].${f}` : f).replace(/\.$/, '');
    if (item === null || typeof item !== 'object' || Array.isArray(item)) {
      errors.push({ field: at(''), message: 'must be an object like {"payload": …}' });
      return;
    }
    const m = item as Record<string, unknown>;
    const known = allowDedup ? FIELDS : FIELDS.filter((f) => !DEDUP_FIELDS.includes(f) && f !== 'orderingKey');
    for (const key of Object.keys(m)) {
      if (!allowDedup && DEDUP_FIELDS.includes(key)) errors.push({ field: at(key), message: 'is not supported here: dedup keys belong to a queue publish' });
      else if (!allowDedup && key === 'orderingKey') errors.push({ field: at(key), message: 'is not supported here: ordering keys belong to a queue publish' });
      else if (!known.includes(key)) errors.push({ field: at(key), message: `is not a known field (${known.join(', ')})` });
    }
    if (!('payload' in m) || m.payload === undefined) errors.push({ field: at('payload'), message: 'is required' });
    const payloadJson = payloadText(m.payload);
    if (Buffer.byteLength(payloadJson, 'utf8') > maxMessageBytes) {
      tooLarge.push({ field: at('payload'), message: `is ${Buffer.byteLength(payloadJson, 'utf8')} bytes; the limit is ${maxMessageBytes}` });
    }
    let id: string = newId();
    if (m.id !== undefined) {
      if (typeof m.id !== 'string' || !UUID_PATTERN.test(m.id)) errors.push({ field: at('id'), message: 'must be a UUID' });
      else id = m.id.toLowerCase();
    }
    if (seen.has(id)) errors.push({ field: at('id'), message: 'appears twice in this batch' });
    seen.add(id);

    const headers: Headers = {};
    if (m.headers !== undefined) {
      if (m.headers === null || typeof m.headers !== 'object' || Array.isArray(m.headers)) {
        errors.push({ field: at('headers'), message: 'must be an object of string values' });
      } else {
        const entries = Object.entries(m.headers as Record<string, unknown>);
        if (entries.length > MAX_HEADERS) errors.push({ field: at('headers'), message: `has more than ${MAX_HEADERS} entries` });
        for (const [name, value] of entries) {
          const why = headerProblem(name, value);
          if (why) errors.push({ field: at(`headers.${name.slice(0, 64)}`), message: why });
          else headers[name] = value as string; // headerProblem accepted it: a string
        }
        const size = Buffer.byteLength(JSON.stringify(m.headers), 'utf8');
        if (size > MAX_HEADERS_BYTES) tooLarge.push({ field: at('headers'), message: `are ${size} bytes as JSON; the limit is ${MAX_HEADERS_BYTES}` });
      }
    }
    if (m.correlationId !== undefined) {
      const why = correlationIdProblem(m.correlationId);
      if (why) errors.push({ field: at('correlationId'), message: why });
      else headers[CORRELATION_ID_HEADER] = m.correlationId as string;
    }
    let delayMs = 0;
    if (m.delaySeconds !== undefined) {
      const d = m.delaySeconds;
      if (typeof d !== 'number' || !Number.isFinite(d) || d < 0 || d > MAX_DELAY_SECONDS) {
        errors.push({ field: at('delaySeconds'), message: `must be a number from 0 to ${MAX_DELAY_SECONDS} (3650 days)` });
      } else delayMs = Math.round(d * 1000);
    }
    let priority = 0;
    if (m.priority !== undefined) {
      const p = m.priority;
      if (typeof p !== 'number' || !Number.isInteger(p) || p < MIN_PRIORITY || p > MAX_PRIORITY) {
        errors.push({ field: at('priority'), message: `must be an integer from ${MIN_PRIORITY} to ${MAX_PRIORITY} (higher is claimed first)` });
      } else priority = p;
    }
    const expiry = expiryOf(m, nowMs, nowMs + delayMs, at, errors);
    if (expiry !== undefined) headers[EXPIRES_AT_HEADER] = expiry;
    const dedup = allowDedup ? dedupOf(m, at, errors) : undefined;
    const orderingKey = allowDedup ? orderingKeyOf(m.orderingKey, at, errors) : undefined;
    messages.push({
      id,
      queue,
      payloadJson,
      headers,
      delayMs,
      ...(m.id === undefined ? { generatedId: true } : {}),
      ...(dedup ? { dedup } : {}),
      ...(priority !== 0 ? { priority } : {}),
      ...(orderingKey === undefined ? {} : { orderingKey }),
    });
  });
  if (errors.length > 0) return fail(400, 'the request has invalid fields; nothing was published', errors);
  if (tooLarge.length > 0) return fail(413, `a payload is larger than MAX_MESSAGE_BYTES, or headers larger than ${MAX_HEADERS_BYTES} bytes; nothing was published`, tooLarge);
  return { ok: true, messages, batch };
}

/** dedupKey (1–200 characters), dedupWindowSeconds (required with it) and dedupMode (drop, the default, or debounce). */
function dedupOf(m: Record<string, unknown>, at: (f: string) => string, errors: FieldError[]): OutgoingMessage['dedup'] {
  if (m.dedupKey === undefined) {
    for (const f of ['dedupWindowSeconds', 'dedupMode']) if (m[f] !== undefined) errors.push({ field: at(f), message: 'needs a dedupKey' });
    return undefined;
  }
  const before = errors.length;
  const key = m.dedupKey;
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_DEDUP_KEY_CHARS) {
    errors.push({ field: at('dedupKey'), message: `must be a string of 1 to ${MAX_DEDUP_KEY_CHARS} characters` });
  } else if (CONTROL_IN_NAME.test(key) || !isWellFormedUtf16(key)) {
    errors.push({ field: at('dedupKey'), message: 'must not contain control characters or lone surrogates' });
  }
  const w = m.dedupWindowSeconds;
  if (w === undefined) errors.push({ field: at('dedupWindowSeconds'), message: 'is required with a dedupKey' });
  else if (typeof w !== 'number' || !Number.isFinite(w) || w <= 0 || w > MAX_DEDUP_WINDOW_SECONDS) {
    errors.push({ field: at('dedupWindowSeconds'), message: `must be a number greater than 0 and at most ${MAX_DEDUP_WINDOW_SECONDS} (30 days)` });
  }
  const mode = m.dedupMode ?? 'drop';
  if (!DEDUP_MODES.includes(mode as DedupMode)) errors.push({ field: at('dedupMode'), message: `must be one of ${DEDUP_MODES.join(', ')}` });
  if (errors.length > before) return undefined;
  return { key: key as string, windowMs: Math.max(1, Math.round((w as number) * 1000)), mode: mode as DedupMode };
}

/** orderingKey: 1–200 characters, no control characters, well-formed UTF-16 (compared exactly, like a dedup key). */
function orderingKeyOf(key: unknown, at: (f: string) => string, errors: FieldError[]): string | undefined {
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_ORDERING_KEY_CHARS) {
    errors.push({ field: at('orderingKey'), message: `must be a string of 1 to ${MAX_ORDERING_KEY_CHARS} characters` });
  } else if (CONTROL_IN_NAME.test(key) || !isWellFormedUtf16(key)) {
    errors.push({ field: at('orderingKey'), message: 'must not contain control characters or lone surrogates' });
  } else return key;
  return undefined;
}

/**
 * expiresAt (an ISO 8601 instant with a zone) or ttlSeconds (from now), not both; the expiry must fall after the
 * job is due (now + delaySeconds), else it could never run. ttlSeconds counts from the publish, on the app's clock.
 * Answers the AR-Expires-At header value.
 */
function expiryOf(m: Record<string, unknown>, nowMs: number, dueMs: number, at: (f: string) => string, errors: FieldError[]): string | undefined {
  if (m.expiresAt !== undefined && m.ttlSeconds !== undefined) {
    errors.push({ field: at('ttlSeconds'), message: 'give expiresAt or ttlSeconds, not both' });
    return undefined;
  }
  let ms: number;
  if (m.expiresAt !== undefined) {
    const t = typeof m.expiresAt === 'string' && ISO_INSTANT.test(m.expiresAt) ? Date.parse(m.expiresAt) : NaN;
    if (!Number.isFinite(t)) {
      errors.push({ field: at('expiresAt'), message: 'must be an ISO 8601 instant with a zone (e.g. 2026-12-02T10:00:00Z)' });
      return undefined;
    }
    ms = t;
  } else if (m.ttlSeconds !== undefined) {
    const s = m.ttlSeconds;
    if (typeof s !== 'number' || !Number.isFinite(s) || s <= 0 || s > MAX_DELAY_SECONDS) {
      errors.push({ field: at('ttlSeconds'), message: `must be a number greater than 0 and at most ${MAX_DELAY_SECONDS} (3650 days)` });
      return undefined;
    }
    ms = nowMs + Math.round(s * 1000);
  } else return undefined;
  if (ms <= dueMs) {
    const field = m.expiresAt !== undefined ? 'expiresAt' : 'ttlSeconds';
    errors.push({ field: at(field), message: m.delaySeconds === undefined ? 'is in the past: the job could never run' : 'falls before the job is due (delaySeconds): it could never run' });
    return undefined;
  }
  return new Date(ms).toISOString();
}

/**
 * Header rules: string values; names of 1–256 characters without control characters; values without control
 * characters but tab; both well-formed UTF-16 (PostgreSQL's jsonb refuses lone surrogates, which would break every
 * read of the row's headers); `AR-*` names are the transport's; `__proto__` cannot be kept as a plain key.
 */
function headerProblem(name: string, value: unknown): string | null {
  if (typeof value !== 'string') return 'must be a string';
  if (name === '' || name.length > 256) return 'name must be 1–256 characters';
  if (name === '__proto__') return 'is not a usable header name';
  if (CONTROL_IN_NAME.test(name)) return 'name must not contain control characters';
  if (CONTROL_IN_VALUE.test(value)) return 'must not contain control characters (tab is allowed)';
  if (!isWellFormedUtf16(name) || !isWellFormedUtf16(value)) return 'must be well-formed UTF-16 (no lone surrogates)';
  if (isReserved(name)) return 'is reserved: AR-* headers are set by the transport (use the correlationId field for AR-Correlation-Id)';
  return null;
}

function isReserved(name: string): boolean {
  return name.toLowerCase().startsWith('ar-');
}

function fail(status: 400 | 413, detail: string, errors: FieldError[]): ParsedPublish {
  return { ok: false, status, detail, errors };
}
