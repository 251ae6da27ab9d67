import type { OutgoingMessage } from '../transport/types';
import { activeTraceContext, inSpan, registeredApi } from './otel';
import { formatTraceparent, parseTraceparent, TRACEPARENT_HEADER, TRACESTATE_HEADER, type TraceContext } from './trace-context';

/** An explicit context as a caller gives it (engine option, HTTP request); invalid values are ignored. */
export interface TraceCarrier {
  traceparent?: string;
  tracestate?: string;
}

/** A carrier's context, or undefined when it has no valid traceparent (a bad one is ignored, never an error). */
export function carriedContext(carrier: TraceCarrier | undefined): TraceContext | undefined {
  return carrier?.traceparent === undefined ? undefined : parseTraceparent(carrier.traceparent, carrier.tracestate);
}

/**
 * Runs a publish of `messages` with the caller's trace context stored in their headers: `explicit` when valid,
 * else the active span's. When a tracer provider records, the publish gets a PRODUCER span and the messages carry
 * that span's context (so the jobs hang under it); otherwise they carry the caller's. Without any context nothing
 * is touched. A message that already has its own traceparent header (given by the publisher, e.g. per message in a
 * batch) keeps it.
 */
export function publishTraced<T>(destination: string, explicit: TraceContext | undefined, messages: readonly OutgoingMessage[], publish: () => Promise<T>): Promise<T> {
  if (explicit === undefined && registeredApi() === undefined) return publish();
  const parent = explicit ?? activeTraceContext();
  if (parent === undefined) return publish();
  return inSpan({ name: `publish ${destination}`, kind: 'producer', parent, attributes: { 'messaging.system': 'asyncresponse', 'messaging.destination.name': destination, 'messaging.operation.type': 'send', 'messaging.batch.message_count': messages.length } }, (own) => {
    stampTraceContext(messages, own ?? parent);
    return publish();
  });
}

/** Writes the context into each message's headers unless the message carries a traceparent of its own (its key normalised to lower case). */
export function stampTraceContext(messages: readonly OutgoingMessage[], ctx: TraceContext): void {
  const traceparent = formatTraceparent(ctx);
  for (const m of messages) {
    if (ownTraceparent(m.headers)) continue;
    m.headers[TRACEPARENT_HEADER] = traceparent;
    if (ctx.traceState !== undefined) m.headers[TRACESTATE_HEADER] = ctx.traceState;
    else delete m.headers[TRACESTATE_HEADER];
  }
}

/** Whether the headers already hold a traceparent; a differently cased key (and its tracestate) is renamed to the lower-case key the drain reads. */
function ownTraceparent(headers: Record<string, string>): boolean {
  if (headers[TRACEPARENT_HEADER] !== undefined) return true;
  let found = false;
  for (const key of Object.keys(headers)) {
    const lower = key.toLowerCase();
    if ((lower === TRACEPARENT_HEADER || lower === TRACESTATE_HEADER) && key !== lower) {
      headers[lower] = headers[key]!;
      delete headers[key];
      if (lower === TRACEPARENT_HEADER) found = true;
    }
  }
  return found;
}

/** A context as the engine's publish options take it. */
export function carrierOf(ctx: TraceContext | undefined): TraceCarrier {
  if (ctx === undefined) return {};
  return ctx.traceState !== undefined ? { traceparent: formatTraceparent(ctx), tracestate: ctx.traceState } : { traceparent: formatTraceparent(ctx) };
}
