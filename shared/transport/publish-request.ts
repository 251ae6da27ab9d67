import { randomUUID } from 'node:crypto';
import { correlationIdProblem, isWellFormedUtf16 } from '../correlation-id';
import { payloadText } from '../json/raw-json';
import type { JsonPath } from '../json/scan';
import { UUID_PATTERN, type FieldError } from '../validation';
import { CORRELATION_ID_HEADER, type Headers, type OutgoingMessage } from './types';

export const MAX_BATCH = 100;
export const MAX_DELAY_SECONDS = 3650 * 86400;
const MAX_HEADERS = 64;
/** All headers of one message as stored (JSON, UTF-8): they travel with every claim and dead letter. */
export const MAX_HEADERS_BYTES = 16 * 1024;
// C0 controls and DEL; a tab is allowed in values only
const CONTROL_IN_NAME = /[\u0000-\u001f\u007f]/;
const CONTROL_IN_VALUE = /[\u0000-\u0008\u000a-\u001f\u007f]/;

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
export function parsePublishBody(body: unknown, queue: string, maxMessageBytes: number, newId: () => string = randomUUID): ParsedPublish {
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
    for (const key of Object.keys(m)) {
      if (!['payload', 'id', 'correlationId', 'headers', 'delaySeconds'].includes(key)) {
        errors.push({ field: at(key), message: 'is not a known field (payload, id, correlationId, headers, delaySeconds)' });
      }
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
    messages.push({ id, queue, payloadJson, headers, delayMs, ...(m.id === undefined ? { generatedId: true } : {}) });
  });
  if (errors.length > 0) return fail(400, 'the request has invalid fields; nothing was published', errors);
  if (tooLarge.length > 0) return fail(413, `a payload is larger than MAX_MESSAGE_BYTES, or headers larger than ${MAX_HEADERS_BYTES} bytes; nothing was published`, tooLarge);
  return { ok: true, messages, batch };
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
