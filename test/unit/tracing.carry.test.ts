// Trace context carried without an OpenTelemetry SDK (none is registered in this file): publishes store the
// caller's context in headers, the forwarder sends a child traceparent, and nothing happens without a context.
import { describe, expect, it } from 'vitest';
import { forwardingHandler } from '../../shared/handlers/forwarder';
import type { HttpPost } from '../../shared/handlers/http-post';
import { silentLogger } from '../../shared/log';
import { registeredApi } from '../../shared/tracing/otel';
import { carriedContext, publishTraced, stampTraceContext } from '../../shared/tracing/publish-trace';
import { parseTraceparent } from '../../shared/tracing/trace-context';
import type { Job, JobContext } from '../../shared/transport/job';
import type { OutgoingMessage } from '../../shared/transport/types';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const VALID = `00-${TRACE}-${SPAN}-01`;
const message = (headers: Record<string, string> = {}): OutgoingMessage => ({ id: 'x', queue: 'q', payloadJson: '1', headers, delayMs: 0 });

describe('publish side', () => {
  it('no SDK is registered here (the no-op path is what this file tests)', () => {
    expect(registeredApi()).toBeUndefined();
  });

  it('without a context the messages are left alone', async () => {
    const messages = [message()];
    expect(await publishTraced('q', undefined, messages, async () => 'published')).toBe('published');
    expect(messages[0]!.headers).toEqual({});
  });

  it('an invalid explicit traceparent is ignored and never fails the publish', async () => {
    const messages = [message()];
    const ctx = carriedContext({ traceparent: 'garbage', tracestate: 'a=1' });
    expect(ctx).toBeUndefined();
    expect(await publishTraced('q', ctx, messages, async () => 'published')).toBe('published');
    expect(messages[0]!.headers).toEqual({});
  });

  it("an explicit context is stored as given (the job becomes the caller's child); a message's own traceparent wins", async () => {
    const own = `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`;
    const messages = [message({ a: 'b' }), message({ Traceparent: own, TraceState: 'x=1' })];
    await publishTraced('q', carriedContext({ traceparent: VALID, tracestate: 'congo=t61rcWkgMzE' }), messages, async () => undefined);
    expect(messages[0]!.headers).toEqual({ a: 'b', traceparent: VALID, tracestate: 'congo=t61rcWkgMzE' });
    expect(messages[1]!.headers).toEqual({ traceparent: own, tracestate: 'x=1' });
  });

  it('a context without tracestate drops a stray tracestate header (it would belong to another trace)', () => {
    const messages = [message({ tracestate: 'old=1' })];
    stampTraceContext(messages, parseTraceparent(VALID)!);
    expect(messages[0]!.headers).toEqual({ traceparent: VALID });
  });
});

describe('forwarder', () => {
  const job: Job = { id: 'j1', queue: 'q', payload: 1, payloadJson: '1', headers: {}, attempt: 1, createdAt: new Date() };
  const capture = () => {
    const sent: Array<Record<string, string>> = [];
    const post: HttpPost = async (_url, headers) => {
      sent.push(headers);
      return { status: 200, statusText: 'OK', text: '' };
    };
    return { sent, post };
  };
  const ctx = (trace?: JobContext['trace']): JobContext => ({ signal: new AbortController().signal, log: silentLogger, ...(trace ? { trace } : {}) });

  it('sends no trace headers for a job without a context', async () => {
    const { sent, post } = capture();
    await forwardingHandler('http://127.0.0.1:9/x', 1000, post)(job, ctx());
    expect(Object.keys(sent[0]!).filter((k) => k.startsWith('trace'))).toEqual([]);
  });

  it("sends a child traceparent (new span id, the job's trace id and flags) and the tracestate", async () => {
    const { sent, post } = capture();
    const parent = parseTraceparent(VALID, 'a=1')!;
    await forwardingHandler('http://127.0.0.1:9/x', 1000, post)(job, ctx(parent));
    const got = parseTraceparent(sent[0]!.traceparent, sent[0]!.tracestate);
    expect(got?.traceId).toBe(TRACE);
    expect(got?.flags).toBe(1);
    expect(got?.spanId).not.toBe(SPAN);
    expect(got?.traceState).toBe('a=1');
  });
});
