import { stringifyJson } from '../json/raw-json';

/** JSON text with object keys sorted, so two starts with semantically equal input compare equal. */
export function canonicalJson(text: string): string {
  return JSON.stringify(sortKeys(JSON.parse(text)));
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) out[k] = sortKeys((v as Record<string, unknown>)[k]);
    return out;
  }
  return v;
}

/** A value's JSON text (a RawJson as its own text); undefined (a step that returned nothing) is stored as null. */
export function toJson(value: unknown): string {
  return stringifyJson(value) ?? 'null';
}
