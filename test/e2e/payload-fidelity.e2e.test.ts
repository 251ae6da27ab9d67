// A queue loses no data: payloads come back as the exact JSON text the caller sent (big integers, 1e999, long
// decimals) through every path that emits them; deeply nested bodies are a 400; correlation ids of any script
// reach forward targets and callbacks in a header a UTF-8 receiver decodes exactly.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../../shared/channel/signature';
import { decodeHeaderValue } from '../../shared/handlers/header-value';
import { eventually } from '../support/messages';
import { postJson, startApp, type RunningApp } from './app-harness';
import { e2eStoreGap } from './app-harness-store';

const SECRET = 'fidelity-signing-secret-0123456789';
const PAYLOAD = '{"a":9007199254740993,"b":1e999,"c":123456789012345678901234567890,"d":0.10000000000000000000001}';
/** What the forward target answers for correlated jobs: becomes the worker's response. */
const ANSWER = '{"result":123456789012345678901234567890.5e-3,"id":9007199254740993,"tiny":1e-999}';
const UNICODE_ID = '№-Кириллица-漢字-😀-\u200f';

type Received = { path: string; body: string; headers: IncomingHttpHeaders };
const received: Received[] = [];
const failJobIds = new Set<string>();
let target: Server;
let app: RunningApp;

beforeAll(async () => {
  target = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body: Buffer.concat(chunks).toString('utf8'), headers: req.headers });
      const fail = failJobIds.has(String(req.headers['x-asyncresponse-job-id']));
      res.writeHead(fail ? 500 : 200, { 'content-type': 'application/json' }).end(fail ? '{"error":"down"}' : ANSWER);
    });
  });
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  const port = (target.address() as AddressInfo).port;
  app = await startApp({
    PGLITE_DATA_DIR: 'memory://',
    WORKER_FORWARD_URL: `http://127.0.0.1:${port}/forward`,
    DRAIN_WORKER_SCHEDULE: '*/1 * * * * *',
    DRAIN_RESPONSES_SCHEDULE: '*/1 * * * * *',
    DRAIN_CALLBACKS_SCHEDULE: '*/1 * * * * *',
    SWEEP_CHANNEL_SCHEDULE: '*/1 * * * * *',
    DRAIN_BUDGET_SECONDS: '5',
    DRAIN_IDLE_GRACE_SECONDS: '0.5',
    DELIVERY_CONFIRMATION_TIMEOUT_MS: '500',
    MAX_DELIVERY_ATTEMPTS: '1',
    REDELIVERY_DELAY_SECONDS: '0',
    CALLBACK_ALLOWED_HOSTS: '127.0.0.1',
    CALLBACK_SIGNING_SECRET: SECRET,
    LOG_LEVEL: 'warn',
  });
  // open the store (PGlite start, schema) here, under the hook timeout, not inside the first test
  if (!(await e2eStoreGap())) expect((await app.api('health')).status).toBe(200);
});
afterAll(async () => {
  await app?.close();
  await new Promise((r) => target?.close(r));
});

const targetUrl = (path: string) => `http://127.0.0.1:${(target.address() as AddressInfo).port}${path}`;
const arrivals = (path: string, jobId?: string) =>
  received.filter((r) => r.path === path && (jobId === undefined || r.headers['x-asyncresponse-job-id'] === jobId));
const publish = (body: string) => app.api('queues/worker/messages', postJson(body));
const getResponseText = async (correlationId: string, waitSeconds: number) => {
  const res = await app.api(`responses?correlationId=${encodeURIComponent(correlationId)}&waitSeconds=${waitSeconds}`);
  expect(res.status).toBe(200);
  return res.text();
};

describe('payloads come back as the caller sent them (local host over HTTP)', () => {
  it('the forward handler receives the published payload text unchanged', async () => {
    const id = '2d9f0c1e-3a4b-4c5d-8e6f-7a8b9c0d1e2f';
    expect((await publish(`{"payload":${PAYLOAD},"id":"${id}"}`)).status).toBe(201);
    const [got] = await eventually(() => (arrivals('/forward', id).length > 0 ? arrivals('/forward', id) : undefined), 'the forwarded job', 10_000);
    expect(got!.body).toContain(`"payload":${PAYLOAD}}`);
  });

  it('a batch keeps each item’s payload text, whitespace trimmed at its ends only', async () => {
    const ids = ['3e0a1d2f-4b5c-4d6e-9f70-8b9c0d1e2f30', '4f1b2e30-5c6d-4e7f-a081-9c0d1e2f3041'];
    const res = await publish(`[ {"id":"${ids[0]}","payload":  ${PAYLOAD}  }, {"payload":[ 1e999 , -0.0 ],"id":"${ids[1]}"} ]`);
    expect(res.status).toBe(201);
    const bodies = await eventually(() => {
      const got = ids.map((id) => arrivals('/forward', id)[0]?.body);
      return got.every((b) => b !== undefined) ? got : undefined;
    }, 'both forwarded jobs', 10_000);
    expect(bodies[0]).toContain(`"payload":${PAYLOAD}}`);
    expect(bodies[1]).toContain('"payload":[ 1e999 , -0.0 ]}');
  });

  it('a dead letter keeps the payload text in GET and through requeue to the handler', async () => {
    const id = '5a2c3f41-6d7e-4f80-b192-0d1e2f304152';
    failJobIds.add(id);
    expect((await publish(`{"payload":${PAYLOAD},"id":"${id}"}`)).status).toBe(201);
    const listed = await eventually(async () => {
      const text = await (await app.api('queues/worker/deadletters')).text();
      return text.includes(id) ? text : undefined;
    }, 'the dead letter', 10_000);
    expect(listed).toContain(`"id":"${id}","sourceQueue":"worker","reason":`);
    expect(listed).toContain(`"payload":${PAYLOAD},"headers"`);
    failJobIds.delete(id);
    expect((await app.api(`queues/worker/deadletters/${id}/requeue`, { method: 'POST' })).status).toBe(200);
    await eventually(() => arrivals('/forward', id).length === 2, 'the requeued job to be forwarded', 10_000);
    expect(arrivals('/forward', id)[1]!.body).toContain(`"payload":${PAYLOAD}}`);
  });

  it('a worker response (the target’s answer) reaches GET /api/responses unchanged', async () => {
    const waiting = getResponseText('fidelity-worker-1', 20);
    await eventually(async () => {
      const { getRuntime } = await import('../../shared/runtime');
      return (await (await getRuntime()).channel.store.countActiveSubscribers('fidelity-worker-1')) === 1;
    }, 'the waiter to register');
    expect((await publish(`{"payload":${PAYLOAD},"correlationId":"fidelity-worker-1"}`)).status).toBe(201);
    expect(await waiting).toContain(`"payload":${ANSWER},"final":true`);
  });

  it('POST /api/responses and raw responses on the response queue (ingress) come back unchanged', async () => {
    const post = await app.api('responses', postJson(`{"correlationId":"fidelity-post-1","payload":${PAYLOAD}}`));
    expect(post.status).toBe(202);
    expect(await getResponseText('fidelity-post-1', 0)).toContain(`"payload":${PAYLOAD},"final":true`);

    const raw = `{"CorrelationId":"fidelity-ingress-1","value":${PAYLOAD}}`;
    expect((await app.api('queues/response/messages', postJson(`{"payload":${raw}}`))).status).toBe(201);
    expect(await getResponseText('fidelity-ingress-1', 20)).toContain(`"payload":${raw},"final":true`);
  });

  it('a callback carries the payload text unchanged, signed, with a decodable non-ASCII correlation id', async () => {
    const reg = await app.api('waiters', postJson({ correlationId: UNICODE_ID, callbackUrl: targetUrl('/cb-post') }));
    expect(reg.status).toBe(201);
    const post = await app.api('responses', postJson(`{"correlationId":${JSON.stringify(UNICODE_ID)},"payload":${PAYLOAD}}`));
    expect(await post.json()).toMatchObject({ delivery: 'recovery' });
    const [call] = await eventually(() => (arrivals('/cb-post').length > 0 ? arrivals('/cb-post') : undefined), 'the callback', 15_000);
    expect(call!.body).toContain(`"payload":${PAYLOAD},"final":true`);
    expect(verifySignature(SECRET, call!.body, call!.headers['x-signature'] as string)).toBe(true);
    expect(decodeHeaderValue(call!.headers['x-asyncresponse-correlation-id'] as string)).toBe(UNICODE_ID);
    expect(JSON.parse(call!.body)).toMatchObject({ correlationId: UNICODE_ID });
  });

  it('a forwarded job with a non-ASCII correlation id is delivered (header decodable) and its answer reaches the callback', async () => {
    const correlationId = `worker-${UNICODE_ID}-é`;
    expect((await app.api('waiters', postJson({ correlationId, callbackUrl: targetUrl('/cb-worker') }))).status).toBe(201);
    const id = '6b3d4052-7e8f-4091-a2a3-1e2f30415263';
    expect((await publish(`{"payload":${PAYLOAD},"id":"${id}","correlationId":${JSON.stringify(correlationId)}}`)).status).toBe(201);
    const [forwarded] = await eventually(() => (arrivals('/forward', id).length > 0 ? arrivals('/forward', id) : undefined), 'the forwarded job', 10_000);
    expect(decodeHeaderValue(forwarded!.headers['x-asyncresponse-correlation-id'] as string)).toBe(correlationId);
    const [call] = await eventually(() => (arrivals('/cb-worker').length > 0 ? arrivals('/cb-worker') : undefined), 'the callback', 15_000);
    expect(call!.body).toContain(`"payload":${ANSWER},"final":true`);
    expect(decodeHeaderValue(call!.headers['x-asyncresponse-correlation-id'] as string)).toBe(correlationId);
    expect(verifySignature(SECRET, call!.body, call!.headers['x-signature'] as string)).toBe(true);
  });
});

describe('deeply nested bodies are a 400 problem on every route that takes a body', () => {
  const deep = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
  it.each([
    ['queues/worker/messages', `{"payload":${deep(4100)}}`],
    ['queues/worker/messages', `[{"payload":${deep(4100)}}]`],
    ['responses', `{"correlationId":"deep-1","payload":${deep(4100)}}`],
    ['waiters', `{"correlationId":"deep-1","callbackUrl":"http://127.0.0.1/x","ttlSeconds":${deep(4100)}}`],
  ])('POST /api/%s', async (route, body) => {
    expect(body.length).toBeLessThan(4 * 1024 * 1024);
    const res = await app.api(route, postJson(body));
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(((await res.json()) as { detail: string }).detail).toMatch(/deeper than 128 levels/);
  });
});
