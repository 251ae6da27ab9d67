import { DEAD_LETTER_REASON_HEADER, DEAD_LETTER_SOURCE_HEADER, type Headers } from './types';

/**
 * Reads headers_json leniently (spec §1.16): this runs after a claim has already spent an attempt, so
 * rejecting odd content would only create an unkillable poison row. Garbage or a non-object → {};
 * strings as-is, null skipped, other values as their JSON text.
 */
export function parseHeadersLenient(json: string | null | undefined): Headers {
  if (!json) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return {};
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
  const obj = parsed as Record<string, unknown>;
  // the common case, every value a string (what the app writes), keeps the parsed object: no copy per claimed row
  for (const key in obj) {
    if (typeof obj[key] !== 'string') return normalized(obj);
  }
  return obj as Headers;
}

function normalized(obj: Record<string, unknown>): Headers {
  const out: Headers = {};
  for (const [key, value] of Object.entries(obj)) {
    if (value === null || value === undefined) continue;
    // defined, not assigned: an assignment to `__proto__` would set the prototype instead of keeping the header
    Object.defineProperty(out, key, { value: typeof value === 'string' ? value : JSON.stringify(value), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** Header lookup by name, case-insensitively (exact match first). */
export function getHeader(headers: Headers, name: string): string | undefined {
  if (name in headers) return headers[name];
  // The names looked up are ASCII, and a key that lowercases to an ASCII name has that name's length: other lengths
  // are skipped, and the lowercase copy is made only when a key of the same length comes up.
  let lower: string | undefined;
  for (const key in headers) {
    if (key.length !== name.length) continue;
    lower ??= name.toLowerCase();
    if (key.toLowerCase() === lower) return headers[key];
  }
  return undefined;
}

/**
 * Original headers plus the two dead-letter headers; CR and LF in the reason become spaces, and U+0000 and lone
 * surrogates become U+FFFD everywhere (PostgreSQL's jsonb refuses both, and the dead-letter queries read these
 * headers as JSON).
 */
export function deadLetterHeaders(original: Headers, reason: string, sourceQueue: string): Headers {
  const out: Headers = {};
  for (const [key, value] of Object.entries(original)) {
    const lower = key.toLowerCase();
    if (lower === DEAD_LETTER_REASON_HEADER.toLowerCase() || lower === DEAD_LETTER_SOURCE_HEADER.toLowerCase()) continue;
    out[jsonbSafe(key)] = jsonbSafe(value);
  }
  out[DEAD_LETTER_REASON_HEADER] = jsonbSafe(reason.replace(/[\r\n]/g, ' '));
  out[DEAD_LETTER_SOURCE_HEADER] = sourceQueue;
  return out;
}

const JSONB_UNSAFE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** U+0000 and lone surrogates as U+FFFD: PostgreSQL text refuses U+0000, its jsonb refuses both. */
export function jsonbSafe(s: string): string {
  return s.replace(JSONB_UNSAFE, '\uFFFD');
}
