import { correlationIdProblem } from '../correlation-id';
import { payloadText } from '../json/raw-json';
import type { JsonPath } from '../json/scan';
import { UUID_PATTERN, type FieldError } from '../validation';
import type { PublishResponseInput } from './response-channel';

export type ParsedResponse = { ok: true; value: PublishResponseInput } | { ok: false; errors: FieldError[] };

/** Where a response body holds its payload: read it as RawJson (readJsonBody's rawAt), so it is stored as sent. */
export function isResponsePayloadPath(path: JsonPath): boolean {
  return path.length === 1 && path[0] === 'payload';
}

/** Validates POST /api/responses: { correlationId, payload, id?, final? (default true), error? }. */
export function parseResponseBody(body: unknown, maxBytes: number): ParsedResponse {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return { ok: false, errors: [{ field: '', message: 'must be an object like {"correlationId": …, "payload": …}' }] };
  }
  const b = body as Record<string, unknown>;
  const errors: FieldError[] = [];
  for (const key of Object.keys(b)) {
    if (!['correlationId', 'payload', 'id', 'final', 'error'].includes(key)) errors.push({ field: key, message: 'is not a known field (correlationId, payload, id, final, error)' });
  }
  const why = correlationIdProblem(b.correlationId);
  if (why) errors.push({ field: 'correlationId', message: why });
  if (!('payload' in b) && b.error === undefined) errors.push({ field: 'payload', message: 'is required (or give error)' });
  if (Buffer.byteLength(payloadText(b.payload), 'utf8') > maxBytes) errors.push({ field: 'payload', message: `is larger than ${maxBytes} bytes` });
  if (b.id !== undefined && (typeof b.id !== 'string' || !UUID_PATTERN.test(b.id))) errors.push({ field: 'id', message: 'must be a UUID' });
  if (b.final !== undefined && typeof b.final !== 'boolean') errors.push({ field: 'final', message: 'must be true or false' });
  if (b.error !== undefined && (typeof b.error !== 'string' || b.error.length === 0 || b.error.length > 4000)) {
    errors.push({ field: 'error', message: 'must be a non-empty string of at most 4000 characters' });
  }
  if (errors.length > 0) return { ok: false, errors };
  return {
    ok: true,
    value: {
      correlationId: b.correlationId as string,
      payload: b.payload ?? null,
      final: b.final !== false,
      ...(typeof b.id === 'string' ? { id: b.id.toLowerCase() } : {}),
      ...(typeof b.error === 'string' ? { error: b.error } : {}),
    },
  };
}
