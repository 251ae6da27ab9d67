// The bridge to OpenTelemetry. Spans are made through @opentelemetry/api only when something registered a global
// tracer provider or context manager (applicationinsights' distro does when APPLICATIONINSIGHTS_CONNECTION_STRING
// is set; a test or a user's own program may register the SDK). The API keeps its globals under one symbol per
// major version: while that symbol is absent every API call would be a no-op, so this module does not even load
// the API then, and everything below degrades to plain W3C header work (trace-context.ts).

import type * as OtelApi from '@opentelemetry/api';
import { childOf, type TraceContext } from './trace-context';
import { requirePeer } from '../peer';

type Api = typeof OtelApi;
const API_GLOBAL = Symbol.for('opentelemetry.js.api.1');
const TRACER_NAME = 'asyncresponse-functions';
/**
 * The OpenTelemetry API when something registered its globals; undefined otherwise (then no span can record).
 * Node's module cache makes the repeated require a lookup (and keeps this module free of mutable state).
 */
export function registeredApi(): Api | undefined {
  if ((globalThis as Record<symbol, unknown>)[API_GLOBAL] === undefined) return undefined;
  return requirePeer<Api>('@opentelemetry/api');
}

/** The active span's context (e.g. the Functions invocation's, bound by the distro), when it is a valid one. */
export function activeTraceContext(): TraceContext | undefined {
  const span = registeredApi()?.trace.getActiveSpan();
  return span ? fromSpanContext(span.spanContext()) : undefined;
}

export type SpanKindName = 'producer' | 'consumer' | 'client';

export interface SpanRequest {
  name: string;
  kind: SpanKindName;
  attributes?: Record<string, string | number>;
  /** The parent; absent = the active context's span. */
  parent?: TraceContext;
  /** Link the span to the active span too (e.g. the drain invocation that ran a job stored under another trace). */
  linkActive?: boolean;
}

/**
 * Runs `work` inside a new span when a tracer provider records one, passing the span's own context (what onward
 * calls carry); without one, passes the parent (or undefined) and makes no span. A rejection marks the span failed.
 */
export async function inSpan<T>(request: SpanRequest, work: (trace: TraceContext | undefined) => Promise<T>): Promise<T> {
  const api = registeredApi();
  if (!api) return work(request.parent);
  const active = api.context.active();
  const base = request.parent ? api.trace.setSpanContext(active, toSpanContext(api, request.parent)) : active;
  const activeSpan = request.linkActive ? api.trace.getSpan(active)?.spanContext() : undefined;
  const links = activeSpan && api.isSpanContextValid(activeSpan) && activeSpan.traceId !== request.parent?.traceId ? [{ context: activeSpan }] : undefined;
  const span = api.trace.getTracer(TRACER_NAME).startSpan(request.name, { kind: KIND[request.kind](api), attributes: request.attributes, links }, base);
  if (!span.isRecording()) {
    span.end();
    return work(request.parent ?? activeTraceContext());
  }
  try {
    const result = await api.context.with(api.trace.setSpan(base, span), () => work(fromSpanContext(span.spanContext())));
    return result;
  } catch (err) {
    span.recordException(err instanceof Error ? err : String(err));
    span.setStatus({ code: api.SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    throw err;
  } finally {
    span.end();
  }
}

/**
 * An outgoing HTTP call on behalf of `parent` (a job's context): a CLIENT span when one records, and the
 * `traceparent` to send, always a new span id under the parent's trace (the span's own id, or a fresh one).
 * Without a parent: no span, no headers.
 */
export function outgoingCall<T>(name: string, parent: TraceContext | undefined, attributes: Record<string, string | number>, call: (sent: TraceContext | undefined) => Promise<T>): Promise<T> {
  if (parent === undefined) return call(undefined);
  if (!registeredApi()) return call(childOf(parent));
  return inSpan({ name, kind: 'client', parent, attributes }, (own) => call(own && own.spanId !== parent.spanId ? own : childOf(parent)));
}

const KIND: Record<SpanKindName, (api: Api) => OtelApi.SpanKind> = {
  producer: (api) => api.SpanKind.PRODUCER,
  consumer: (api) => api.SpanKind.CONSUMER,
  client: (api) => api.SpanKind.CLIENT,
};

function fromSpanContext(sc: OtelApi.SpanContext): TraceContext | undefined {
  if (!registeredApi()!.isSpanContextValid(sc)) return undefined;
  const state = sc.traceState?.serialize();
  return { traceId: sc.traceId, spanId: sc.spanId, flags: sc.traceFlags, ...(state ? { traceState: state } : {}) };
}

function toSpanContext(api: Api, ctx: TraceContext): OtelApi.SpanContext {
  return {
    traceId: ctx.traceId,
    spanId: ctx.spanId,
    traceFlags: ctx.flags,
    isRemote: true,
    ...(ctx.traceState ? { traceState: api.createTraceState(ctx.traceState) } : {}),
  };
}
