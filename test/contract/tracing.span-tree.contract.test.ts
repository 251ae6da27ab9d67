// With an OpenTelemetry SDK registered (an in-memory exporter, as applicationinsights' distro would register its
// own), the spans of publish → job → forward form one tree under the caller's span, and the forward target gets
// the forward span's traceparent. PGlite, in memory.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createEngine, silentLogger, subscriptionQueue, type Engine } from '../../shared';
import { parseTraceparent } from '../../shared/tracing/trace-context';

const exporter = new InMemorySpanExporter();
const received: Array<string | undefined> = [];
let server: http.Server;
let engine: Engine;
let contextManager: AsyncLocalStorageContextManager;

beforeAll(async () => {
  contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  server = http.createServer((req, res) => {
    received.push(req.headers.traceparent as string | undefined);
    req.resume().on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/in`;
  engine = await createEngine({
    store: { kind: 'pglite', dataDir: 'memory://' },
    queues: { fwd: { handler: { kind: 'forward', url }, policy: { redeliveryDelayMs: 0 } }, [subscriptionQueue('events', 'audit')]: { handler: { kind: 'forward', url } } },
    topics: { events: ['audit'] },
    logger: silentLogger,
  });
});

afterAll(async () => {
  await engine?.close();
  server?.close();
  trace.disable();
  context.disable();
  propagation.disable();
});

beforeEach(() => {
  exporter.reset();
  received.length = 0;
});

const drain = () => engine.drain('fwd', { budgetMs: 5_000, idleGraceMs: 300 });
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
const named = (name: string) => exporter.getFinishedSpans().filter((s) => s.name === name);

describe('spans of one job with the SDK on', () => {
  it('caller → publish (producer) → process (consumer) → forward POST (client), one trace; the target gets the forward span', async () => {
    const tracer = trace.getTracer('test');
    await tracer.startActiveSpan('caller', async (span) => {
      await engine.publish('fwd', { payload: { n: 1 }, correlationId: 'c-1' });
      span.end();
    });
    await drain();

    const [caller] = named('caller');
    const [publish] = named('publish fwd');
    const [process] = named('process fwd');
    const [forward] = named('forward POST');
    expect(caller && publish && process && forward).toBeTruthy();
    const traceId = caller!.spanContext().traceId;
    for (const s of [publish!, process!, forward!]) expect(s.spanContext().traceId).toBe(traceId);
    expect(parentOf(publish!)).toBe(caller!.spanContext().spanId);
    expect(parentOf(process!)).toBe(publish!.spanContext().spanId);
    expect(parentOf(forward!)).toBe(process!.spanContext().spanId);
    expect([publish!.kind, process!.kind, forward!.kind]).toEqual([SpanKind.PRODUCER, SpanKind.CONSUMER, SpanKind.CLIENT]);
    expect(process!.attributes['messaging.destination.name']).toBe('fwd');
    expect(process!.attributes['messaging.message.conversation_id']).toBe('c-1');

    expect(received).toHaveLength(1);
    const sent = parseTraceparent(received[0]);
    expect(sent?.traceId).toBe(traceId);
    expect(sent?.spanId).toBe(forward!.spanContext().spanId);
  });

  it('an explicit traceparent option is the parent (the active span does not matter then)', async () => {
    const explicit = `00-${'ab'.repeat(16)}-${'cd'.repeat(8)}-01`;
    await engine.publish('fwd', { payload: 2 }, { traceparent: explicit });
    await drain();
    const [publish] = named('publish fwd');
    expect(publish?.spanContext().traceId).toBe('ab'.repeat(16));
    expect(parentOf(publish!)).toBe('cd'.repeat(8));
    expect(parseTraceparent(received[0])?.traceId).toBe('ab'.repeat(16));
  });

  it('a job published outside any trace makes no span and sends no traceparent', async () => {
    await engine.publish('fwd', { payload: 3 }, { traceparent: 'not-a-traceparent' });
    await drain();
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual([]);
    expect(received).toEqual([undefined]);
  });

  it('a failing job marks its span failed and the retry is a second process span in the same trace', async () => {
    server.removeAllListeners('request');
    let calls = 0;
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      received.push(req.headers.traceparent as string | undefined);
      req.resume().on('end', () => res.writeHead(++calls === 1 ? 500 : 200).end());
    });
    const explicit = `00-${'12'.repeat(16)}-${'34'.repeat(8)}-01`;
    await engine.publish('fwd', { payload: 4 }, { traceparent: explicit });
    await drain(); // redeliveryDelayMs 0: the retry runs in the same drain
    const processes = named('process fwd');
    expect(processes.length).toBe(2);
    expect(processes.map((s) => s.status.code)).toEqual([2, 0]); // ERROR, then UNSET
    for (const s of processes) expect(s.spanContext().traceId).toBe('12'.repeat(16));
    expect(received.map((v) => parseTraceparent(v)?.traceId)).toEqual(['12'.repeat(16), '12'.repeat(16)]);
  });

  it("a topic's copies keep the publish's context: the subscription's job is a child of the topic publish span", async () => {
    await trace.getTracer('test').startActiveSpan('caller', async (span) => {
      await engine.publishToTopic('events', { payload: { e: 1 } });
      span.end();
    });
    await engine.drain(subscriptionQueue('events', 'audit'), { budgetMs: 5_000, idleGraceMs: 300 });
    const [publish] = named('publish events');
    const [process] = named(`process ${subscriptionQueue('events', 'audit')}`);
    expect(publish && process).toBeTruthy();
    expect(parentOf(process!)).toBe(publish!.spanContext().spanId);
    expect(parseTraceparent(received[0])?.traceId).toBe(publish!.spanContext().traceId);
  });
});
