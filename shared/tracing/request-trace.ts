import { activeTraceContext } from './otel';
import { parseTraceparent, TRACEPARENT_HEADER, TRACESTATE_HEADER, type TraceContext } from './trace-context';

/** What an HTTP function knows of its caller's trace (structural, so the engine needs nothing from @azure/functions). */
export interface RequestTraceSource {
  /** The invocation's context (InvocationContext.traceContext): the Functions host's span, a child of the caller's. */
  traceContext?: { traceParent?: string | null; traceState?: string | null } | undefined;
}

/**
 * The trace context an HTTP-triggered publish stores: the active span's (applicationinsights binds each invocation's
 * span), else the invocation's trace context from the host, else the request's own `traceparent` / `tracestate`
 * headers (the local host passes none). Invalid values at each step are skipped.
 */
export function requestTraceContext(invocation: RequestTraceSource, headers: { get(name: string): string | null }): TraceContext | undefined {
  return (
    activeTraceContext() ??
    parseTraceparent(invocation.traceContext?.traceParent, invocation.traceContext?.traceState) ??
    parseTraceparent(headers.get(TRACEPARENT_HEADER), headers.get(TRACESTATE_HEADER))
  );
}
