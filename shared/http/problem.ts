// application/problem+json answers (RFC 9457). Plain objects shaped like @azure/functions' HttpResponseInit,
// so the engine stays free of the Functions library. Every JSON answer is written here, as text that ends with a
// newline: answers printed one after another (curl in a shell) stay on lines of their own. `jsonBody` would have the
// library (Azure's worker and the local host alike) write JSON.stringify's text, which ends without one.
import { stringifyJson } from '../json/raw-json';
import type { FieldError } from '../validation';

import { UUID_PATTERN } from '../validation';

export { UUID_PATTERN, type FieldError } from '../validation';

export interface HttpAnswer {
  status: number;
  body?: string;
  headers?: Record<string, string>;
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  411: 'Length Required',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export function problem(status: number, detail: string, errors?: FieldError[]): HttpAnswer {
  const body: Record<string, unknown> = { type: 'about:blank', title: TITLES[status] ?? 'Error', status, detail };
  if (errors && errors.length > 0) body.errors = errors;
  return { status, body: jsonText(body), headers: { 'content-type': 'application/problem+json' } };
}

/**
 * A path id that is no UUID: the same 400 a publish gives a malformed id (`field` must be a UUID), never a 404,
 * which means a well-formed id that names nothing. Undefined when the id is a UUID.
 */
export function malformedId(field: string, id: string | undefined): HttpAnswer | undefined {
  if (id !== undefined && UUID_PATTERN.test(id)) return undefined;
  const shown = (id ?? '').length > 80 ? `${(id ?? '').slice(0, 80)}…` : (id ?? '');
  return problem(400, `${field} '${shown}' is not a UUID`, [{ field, message: 'must be a UUID' }]);
}

/** A value's JSON text as an answer's body: JSON.stringify's, and a newline. */
export function jsonText(body: unknown): string {
  return `${JSON.stringify(body)}\n`;
}

export function json(status: number, body: unknown): HttpAnswer {
  return { status, body: jsonText(body), headers: { 'content-type': 'application/json' } };
}

/** A JSON answer that carries payloads: written with stringifyJson, so RawJson payloads go out as they were sent. */
export function jsonWithPayloads(status: number, body: unknown): HttpAnswer {
  return { status, body: `${stringifyJson(body)}\n`, headers: { 'content-type': 'application/json' } };
}
