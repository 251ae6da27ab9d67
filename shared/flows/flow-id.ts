import { isWellFormedUtf16 } from '../correlation-id';

export const MAX_FLOW_ID_LENGTH = 400;
const MAX_FLOW_ID_UTF8_BYTES = 1023;

/**
 * A run id must be portable across the stores (durable-flows.md §1.2): at most 400 UTF-16 units and 1023 UTF-8
 * bytes, no leading or trailing whitespace (SQL Server pads trailing spaces), none of `/ \ ? #` (it travels in
 * URL paths), no control characters. Ids compare ordinally. Returns null for a usable id, else why not.
 */
export function flowIdProblem(id: unknown): string | null {
  if (typeof id !== 'string') return 'must be a string';
  if (id.length === 0) return 'must not be empty';
  if (id.length > MAX_FLOW_ID_LENGTH) return `is ${id.length} UTF-16 units long; at most ${MAX_FLOW_ID_LENGTH} are allowed`;
  if (Buffer.byteLength(id, 'utf8') > MAX_FLOW_ID_UTF8_BYTES) return `is over ${MAX_FLOW_ID_UTF8_BYTES} UTF-8 bytes`;
  if (id.trim() !== id) return 'must not begin or end with whitespace';
  if (/[/\\?#]/.test(id)) return 'must not contain / \\ ? or #';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(id)) return 'must not contain control characters';
  if (!isWellFormedUtf16(id)) return 'must be well-formed UTF-16';
  return null;
}
