// One trace from publish to callback, through the local host and no OpenTelemetry SDK: the publish request's
// traceparent is stored with the job, the forward target gets a child traceparent of that trace, the job's answer
// keeps it in its response envelope, and the recovery callback for the correlation id carries it on too.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTraceparent } from '../../shared/tracing/trace-context';
import { eventually } from '../support/messages';
import { postJson, startApp, type RunningApp } from './app-harness';

interface Hit {
  path: string;
  traceparent: string | undefined;
  tracestate: string | undefined;
}
const hits: Hit[] = [];
let receiver: Server;
let app: RunningApp;

beforeAll(async () => {
  receiver = createServer((req: IncomingMessage, res) => {
    req.resume().on('end', () => {
      hits.push({ path: req.url ?? '', traceparent: req.headers.traceparent as string | undefined, tracestate: req.headers.tracestate as string | undefined });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"forwarded":true}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const port = (receiver.address() as AddressInfo).port;
  app = await startApp({
    PGLITE_DATA_DIR: 'memory://',
    QUEUES: 'traced',
    QUEUE__traced__FORWARD_URL: `http://127.0.0.1:${port}/forward`,
    DRAIN_WORKER_SCHEDULE: '*/1 * * * * *',
    DRAIN_CALLBACKS_SCHEDULE: '*/1 * * * * *',
    SWEEP_CHANNEL_SCHEDULE: '*/1 * * * * *',
    DRAIN_BUDGET_SECONDS: '5',
    DRAIN_IDLE_GRACE_SECONDS: '0.5',
    DELIVERY_CONFIRMATION_TIMEOUT_MS: '500',
    CALLBACK_ALLOWED_HOSTS: '127.0.0.1',
    CALLBACK_SIGNING_SECRET: 'trace-secret-of-16-or-more',
    LOG_LEVEL: 'warn',
  });
});
afterAll(async () => {
  await app?.close();
  await new Promise((r) => receiver?.close(r));
});

const base = () => `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
const hitAt = (path: string) => eventually(() => hits.find((h) => h.path === path), `a request at ${path}`, 20_000);
const register = async (correlationId: string, path: string) =>
  expect((await app.api('waiters', postJson({ correlationId, callbackUrl: `${base()}${path}` }))).status).toBe(201);

describe('trace context from publish to callback (local host)', () => {
  it("the forward target and the callback receiver get a traceparent with the publish request's trace id", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    await register('trace-1', '/callback-1');
    const published = await app.api(
      'queues/traced/messages',
      postJson({ payload: { n: 1 }, correlationId: 'trace-1' }, { traceparent: `00-${traceId}-${callerSpan}-01`, tracestate: 'congo=t61rcWkgMzE' }),
    );
    expect(published.status).toBe(201);

    const forward = await hitAt('/forward');
    const sent = parseTraceparent(forward.traceparent, forward.tracestate);
    expect(sent?.traceId).toBe(traceId);
    expect(sent?.spanId).not.toBe(callerSpan); // a child: a new span id under the same trace
    expect(sent?.flags).toBe(1);
    expect(sent?.traceState).toBe('congo=t61rcWkgMzE');

    // the job's result is the response for trace-1; nobody waits, so the registration gets it as a callback
    const callback = await hitAt('/callback-1');
    const onward = parseTraceparent(callback.traceparent);
    expect(onward?.traceId).toBe(traceId);
    expect(onward?.spanId).not.toBe(callerSpan);
    expect(onward?.spanId).not.toBe(sent?.spanId);
  }, 60_000);

  it("a response posted under its own traceparent reaches the callback in the poster's trace", async () => {
    const traceId = 'a'.repeat(31) + 'b';
    await register('trace-2', '/callback-2');
    const posted = await app.api('responses', postJson({ correlationId: 'trace-2', payload: { done: true } }, { traceparent: `00-${traceId}-${'c'.repeat(16)}-01` }));
    expect(posted.status).toBe(202);
    const callback = await hitAt('/callback-2');
    expect(parseTraceparent(callback.traceparent)?.traceId).toBe(traceId);
  }, 60_000);

  it('a publish without a (valid) traceparent sends none on, and a bad one never fails the publish', async () => {
    await register('trace-3', '/callback-3');
    const published = await app.api('queues/traced/messages', postJson({ payload: { n: 3 }, correlationId: 'trace-3' }, { traceparent: 'garbage' }));
    expect(published.status).toBe(201);
    const callback = await hitAt('/callback-3');
    expect(callback.traceparent).toBeUndefined();
    const forwards = hits.filter((h) => h.path === '/forward');
    expect(forwards).toHaveLength(2);
    expect(forwards[1]!.traceparent).toBeUndefined();
  }, 60_000);
});
