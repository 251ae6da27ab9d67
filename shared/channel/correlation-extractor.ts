// Response ingress: where a raw response names its correlation id (spec §1.15). The AR-Correlation-Id header
// wins; otherwise each configured JSON path is tried in order. At every step a JSON string that looks like an
// object or array is parsed and descended into (e.g. CustomParameters holding serialized JSON); a property is
// matched exactly first, then case-insensitively. The first non-blank string/number/boolean wins; a path
// that fails in any way is a miss for that path only.

import { getHeader } from '../transport/headers';
import type { Headers } from '../transport/types';

export function extractCorrelationId(headers: Headers, payload: unknown, paths: readonly string[], header = 'AR-Correlation-Id'): string | undefined {
  const fromHeader = getHeader(headers, header);
  if (fromHeader !== undefined && fromHeader.trim() !== '') return fromHeader;
  for (const path of paths) {
    const segments = path.split('.').map((s) => s.trim()).filter((s) => s !== '');
    if (segments.length === 0) continue;
    const hit = walk(payload, segments);
    if (hit !== undefined && hit.trim() !== '') return hit;
  }
  return undefined;
}

function walk(root: unknown, segments: readonly string[]): string | undefined {
  let current = unwrap(root);
  for (const segment of segments) {
    if (current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
    const obj = current as Record<string, unknown>;
    let next: unknown;
    if (Object.prototype.hasOwnProperty.call(obj, segment)) next = obj[segment];
    else {
      const lower = segment.toLowerCase();
      const key = Object.keys(obj).find((k) => k.toLowerCase() === lower);
      if (key === undefined) return undefined;
      next = obj[key];
    }
    current = unwrap(next);
  }
  if (typeof current === 'string') return current;
  if (typeof current === 'number' || typeof current === 'boolean') return JSON.stringify(current);
  return undefined;
}

/** A string holding a JSON object/array is read as that document ("nested JSON strings"). */
function unwrap(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const t = value.trim();
  if (!(t.startsWith('{') || t.startsWith('['))) return value;
  try {
    return JSON.parse(t);
  } catch {
    return value;
  }
}
