// W3C Trace Context (https://www.w3.org/TR/trace-context/) as the transport carries it: parse, validate and
// format `traceparent`, check `tracestate`, make a child. Pure string work, no dependency: a value that does not
// parse is ignored (the job simply has no parent), never an error, so a bad header can never fail a publish.

import { randomBytes } from 'node:crypto';

/** The headers_json keys (the W3C header names themselves, lower case; docs/tracing.md says why not AR-*). */
export const TRACEPARENT_HEADER = 'traceparent';
export const TRACESTATE_HEADER = 'tracestate';

export interface TraceContext {
  traceId: string;
  /** The span id of the parent (the caller's span). */
  spanId: string;
  /** Bit 0 = sampled. */
  flags: number;
  /** The raw tracestate, when there was a valid one. */
  traceState?: string;
}

const TRACEPARENT_00 = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
// A later version may append fields after the flags ("-…"); version ff is invalid.
const TRACEPARENT_FUTURE = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '00000000000000000000000000000000';
const ZERO_SPAN = '0000000000000000';
const MAX_TRACESTATE_LENGTH = 512;
const MAX_TRACESTATE_MEMBERS = 32;
// key = lcalpha / digit start, then lcalpha / digit / _ - * /, optionally tenant@system; value = printable ASCII but , and =, no trailing space
const TRACESTATE_MEMBER = /^[a-z0-9][_0-9a-z\-*/]{0,255}(@[a-z][_0-9a-z\-*/]{0,13})?=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;

/** A traceparent header value → its context; undefined for anything that is not a valid one (ignored, never thrown). */
export function parseTraceparent(value: unknown, traceState?: unknown): TraceContext | undefined {
  if (typeof value !== 'string' || value.length < 55 || value.length > 512) return undefined;
  const v = value.trim();
  let traceId: string;
  let spanId: string;
  let flags: string;
  const exact = TRACEPARENT_00.exec(v);
  if (exact) [, traceId, spanId, flags] = exact as unknown as [string, string, string, string];
  else {
    const future = TRACEPARENT_FUTURE.exec(v);
    // version 00 must have exactly four fields; ff is forbidden; other versions are read as 00 (the spec's rule)
    if (!future || future[1] === '00' || future[1] === 'ff') return undefined;
    [, , traceId, spanId, flags] = future as unknown as [string, string, string, string, string];
  }
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  const ctx: TraceContext = { traceId, spanId, flags: parseInt(flags, 16) };
  const state = traceState === undefined ? undefined : validTracestate(traceState);
  if (state !== undefined) ctx.traceState = state;
  return ctx;
}

/** The tracestate as given when it is a valid list (≤ 512 characters, ≤ 32 members, each key=value); else undefined. */
export function validTracestate(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const v = value.trim();
  if (v === '' || v.length > MAX_TRACESTATE_LENGTH) return undefined;
  const members = v.split(',');
  let count = 0;
  for (const raw of members) {
    const member = raw.trim();
    if (member === '') continue; // empty list members are allowed and ignored
    if (++count > MAX_TRACESTATE_MEMBERS || !TRACESTATE_MEMBER.test(member)) return undefined;
  }
  return count > 0 ? v : undefined;
}

/** A context as a version-00 traceparent value. */
export function formatTraceparent(ctx: Pick<TraceContext, 'traceId' | 'spanId' | 'flags'>): string {
  return `00-${ctx.traceId}-${ctx.spanId}-${(ctx.flags & 0xff).toString(16).padStart(2, '0')}`;
}

/** A fresh, non-zero 8-byte span id (hex). */
export function newSpanId(): string {
  for (;;) {
    const id = randomBytes(8).toString('hex');
    if (id !== ZERO_SPAN) return id;
  }
}

/** The same trace, sampling flags and tracestate under a new span id: what a call made on the context's behalf sends. */
export function childOf(ctx: TraceContext): TraceContext {
  return { ...ctx, spanId: newSpanId() };
}

/** The context as the two headers (tracestate only when there is one). */
export function traceHeaders(ctx: TraceContext): Record<string, string> {
  return ctx.traceState !== undefined ? { [TRACEPARENT_HEADER]: formatTraceparent(ctx), [TRACESTATE_HEADER]: ctx.traceState } : { [TRACEPARENT_HEADER]: formatTraceparent(ctx) };
}
