// Numeric query parameters, read strictly: plain decimal digits only (no '', ' ', 0x10, 1e2), given at most once.

import type { HttpRequest } from '@azure/functions';
import type { FieldError } from '../validation';

const DECIMAL = /^\d+(\.\d+)?$/;
const INTEGER = /^\d+$/;

export type QueryNumber = { ok: true; value: number } | { ok: false; detail: string; errors: FieldError[] };

/**
 * `name` as a number from min to max; `fallback` when absent. Above max: `clamp` caps it (a documented cap),
 * otherwise it is refused.
 */
export function queryNumber(
  request: Pick<HttpRequest, 'query'>,
  name: string,
  o: { fallback: number; min: number; max: number; integer?: boolean; clamp?: boolean },
): QueryNumber {
  const all = request.query.getAll(name);
  // a capped value says so: `waitSeconds=500` waits the cap, so the message must not claim the cap is a limit
  const range = o.clamp
    ? `${o.integer ? 'an integer' : 'a number'} of ${o.min} or more (values over ${o.max} count as ${o.max})`
    : `${o.integer ? 'an integer' : 'a number'} from ${o.min} to ${o.max}`;
  const refuse = (message: string): QueryNumber => ({ ok: false, detail: `${name} must be ${range}`, errors: [{ field: name, message }] });
  if (all.length > 1) return refuse(`is given ${all.length} times`);
  const raw = all[0];
  if (raw === undefined) return { ok: true, value: o.fallback };
  if (!(o.integer ? INTEGER : DECIMAL).test(raw)) return refuse(`got '${raw.slice(0, 50)}'`);
  const value = Number(raw);
  if (value < o.min) return refuse(`got '${raw}'`);
  if (value > o.max) return o.clamp ? { ok: true, value: o.max } : refuse(`got '${raw.slice(0, 50)}'`);
  return { ok: true, value };
}

export type QueryChoice<T extends string> = { ok: true; value: T } | { ok: false; detail: string; errors: FieldError[] };

/** `name` as one of `choices` (exact spelling), `fallback` when absent; given at most once. */
export function queryChoice<T extends string>(request: Pick<HttpRequest, 'query'>, name: string, choices: readonly T[], fallback: T): QueryChoice<T> {
  const all = request.query.getAll(name);
  const refuse = (message: string): QueryChoice<T> => ({ ok: false, detail: `${name} must be one of ${choices.join(', ')}`, errors: [{ field: name, message }] });
  if (all.length > 1) return refuse(`is given ${all.length} times`);
  const raw = all[0];
  if (raw === undefined) return { ok: true, value: fallback };
  return (choices as readonly string[]).includes(raw) ? { ok: true, value: raw as T } : refuse(`got '${raw.slice(0, 50)}'`);
}
