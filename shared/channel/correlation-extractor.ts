// Response ingress: where a raw response names its correlation id (spec §1.15). The AR-Correlation-Id header
// wins; otherwise each configured JSON path is tried in order. At every step a JSON string that looks like an
// object or array is parsed and descended into (e.g. CustomParameters holding serialized JSON); a property is
// matched exactly first, then case-insensitively. The first non-blank string/number/boolean wins; a path
// that fails in any way is a miss for that path only. A number is taken as its source text when the payload
// is given as RawJson (12345678901234567890 stays that, not 12345678901234567000).

import { RawJson, rawJsonAt } from '../json/raw-json';
import { getHeader } from '../transport/headers';
import type { Headers } from '../transport/types';

/** The paths tried when none are configured (CORRELATION_ID_JSON_PATHS, the engine's channel options). */
export const DEFAULT_CORRELATION_ID_JSON_PATHS: readonly string[] = [
  'CorrelationId',
  'CustomParameters',
  'CustomParameters.CorrelationId',
  'PubSubParams.CustomParameters',
  'PubSubParams.CustomParameters.CorrelationId',
  'DagJsonParameters.CorrelationId',
];

/** The JSON document a value was read from (the payload, or a nested JSON string) and its path in it. */
interface Source {
  text: string | undefined;
  path: string[];
}

export function extractCorrelationId(headers: Headers, payload: unknown, paths: readonly string[], header = 'AR-Correlation-Id'): string | undefined {
  const fromHeader = getHeader(headers, header);
  if (fromHeader !== undefined && fromHeader.trim() !== '') return fromHeader;
  for (const path of paths) {
    const segments = path.split('.').map((s) => s.trim()).filter((s) => s !== '');
    if (segments.length === 0) continue;
    const hit = payload instanceof RawJson ? walk(payload.value, segments, payload.text) : walk(payload, segments);
    if (hit !== undefined && hit.trim() !== '') return hit;
  }
  return undefined;
}

function walk(root: unknown, segments: readonly string[], rootText?: string): string | undefined {
  let source: Source = { text: rootText, path: [] };
  let current = unwrap(root, (text) => (source = { text, path: [] }));
  for (const segment of segments) {
    if (current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
    const obj = current as Record<string, unknown>;
    let key: string | undefined = segment;
    if (!Object.prototype.hasOwnProperty.call(obj, segment)) {
      const lower = segment.toLowerCase();
      key = Object.keys(obj).find((k) => k.toLowerCase() === lower);
      if (key === undefined) return undefined;
    }
    source.path.push(key);
    current = unwrap(obj[key], (text) => (source = { text, path: [] }));
  }
  if (typeof current === 'string') return current;
  if (typeof current === 'boolean') return JSON.stringify(current);
  if (typeof current === 'number') return (source.text !== undefined ? rawJsonAt(source.text, source.path)?.text : undefined) ?? JSON.stringify(current);
  return undefined;
}

/** A string holding a JSON object/array is read as that document ("nested JSON strings"); `entered` gets its text. */
function unwrap(value: unknown, entered: (text: string) => void): unknown {
  if (typeof value !== 'string') return value;
  const t = value.trim();
  if (!(t.startsWith('{') || t.startsWith('['))) return value;
  try {
    const parsed: unknown = JSON.parse(t);
    entered(t);
    return parsed;
  } catch {
    return value;
  }
}
