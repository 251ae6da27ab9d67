import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/messages';
import { postJson, startApp, type RunningApp, TIMER_DRAIN_EVERY_SECOND } from './app-harness';

let app: RunningApp;

beforeAll(async () => {
  app = await startApp(
    {
      PGLITE_DATA_DIR: 'memory://',
      ...TIMER_DRAIN_EVERY_SECOND,
      MAX_MESSAGE_BYTES: '2048',
      LOG_LEVEL: 'warn',
    },
    { functionKey: 'test-key' },
  );
});
afterAll(async () => {
  await app?.close();
});

const key = { 'x-functions-key': 'test-key' };
const stats = async () => (await (await app.api('queues/worker', { headers: key })).json()) as Record<string, number>;

describe('worker queue over HTTP (local host, embedded PGlite)', () => {
  it('health answers without a key; other routes need it', async () => {
    const health = await app.api('health');
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok', store: 'pglite', schema: 'ready' });
    expect((await app.api('queues/worker')).status).toBe(401);
    expect((await app.api('queues/worker?code=test-key')).status).toBe(200);
    const spec = (await (await app.api('openapi.json', { headers: key })).json()) as { openapi: string; servers: Array<{ url: string }> };
    expect(spec.openapi).toBe('3.1.0');
    expect(spec.servers[0]!.url).toBe('/api'); // relative: resolves against wherever the document was fetched
  });

  it('a published job is claimed by the drain timer and the echo handler runs', async () => {
    const res = await app.api('queues/worker/messages', postJson({ payload: { hello: 'world' } }, key));
    expect(res.status).toBe(201);
    const body = (await res.json()) as { id: string; queue: string; availableAt: string };
    expect(body).toMatchObject({ queue: 'worker' });
    expect(Date.parse(body.availableAt)).not.toBeNaN();
    await eventually(() => app.logs.some((l) => l.includes(`echo: job ${body.id}`) && l.includes('{"hello":"world"}')), 'the echo handler log line', 8000);
    await eventually(async () => (await stats()).ready === 0 && (await stats()).leased === 0, 'the job to be acked', 5000);
  });

  it('history is off by default: an empty job search says why and names the setting (issue 27)', async () => {
    const res = await app.api('queues/worker/messages', postJson({ payload: { n: 'history' } }, key));
    const { id } = (await res.json()) as { id: string };
    await eventually(async () => (await app.api(`jobs/${id}`, { headers: key })).status === 404, 'the job to be done and gone', 8000);
    const search = (await (await app.api('jobs?queue=worker', { headers: key })).json()) as { items: unknown[]; hint?: string };
    expect(search.items).toEqual([]);
    expect(search.hint).toMatch(/^queue 'worker' keeps no job history: .*JOB_HISTORY_RETENTION_DAYS/);
    const byCorrelation = (await (await app.api('jobs?correlationId=nothing', { headers: key })).json()) as { hint?: string };
    expect(byCorrelation.hint).toMatch(/^no queue keeps job history/);
  });

  it('a duplicate id answers 200 with duplicate: true and enqueues nothing new', async () => {
    const id = '0b7f7d6e-1c2a-4b3c-8d4e-5f6a7b8c9d0e';
    const first = await app.api('queues/worker/messages', postJson({ payload: 1, id, delaySeconds: 3600 }, key));
    const again = await app.api('queues/worker/messages', postJson({ payload: 2, id, delaySeconds: 3600 }, key));
    expect(first.status).toBe(201);
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ id, duplicate: true });
    expect((await stats()).delayed).toBe(1);
  });

  it('an id already on another queue answers 409 and publishes nothing; in a batch the item names that queue', async () => {
    const id = '1c8e8e7f-2d3b-4c4d-9e5f-6a7b8c9d0e1f';
    expect((await app.api('queues/worker/messages', postJson({ payload: 1, id, delaySeconds: 3600 }, key))).status).toBe(201);
    const responseQueue = async () => (await (await app.api('queues/response', { headers: key })).json()) as { ready: number; delayed: number; leased: number };
    const before = await responseQueue();
    const res = await app.api('queues/response/messages', postJson({ payload: 2, id }, key));
    expect(res.status).toBe(409);
    expect(await responseQueue()).toMatchObject({ ready: before.ready, delayed: before.delayed, leased: before.leased });
    expect(((await res.json()) as { detail: string }).detail).toContain(`is already on queue 'worker'`);
    const batch = await app.api('queues/response/messages', postJson([{ payload: 3, id }], key));
    expect(batch.status).toBe(200);
    expect(await batch.json()).toMatchObject({ items: [{ id, queue: 'worker', duplicate: true }] });
  });

  it('a batch publish answers every item', async () => {
    const res = await app.api('queues/worker/messages', postJson([{ payload: 1, delaySeconds: 3600 }, { payload: 2, delaySeconds: 3600 }], key));
    expect(res.status).toBe(201);
    const body = (await res.json()) as { items: Array<{ id: string }> };
    expect(body.items).toHaveLength(2);
  });

  it('bad input gets a problem answer and writes nothing (400, 404, 413, 415)', async () => {
    const before = await stats();
    const cases: Array<[string, RequestInit, number]> = [
      ['queues/worker/messages', postJson('{not json', key), 400],
      ['queues/worker/messages', postJson({ payload: 1, id: 'nope', delaySeconds: -5 }, key), 400],
      ['queues/worker/messages', postJson([{ payload: 1 }, { nope: true }], key), 400],
      ['queues/nosuchqueue/messages', postJson({ payload: 1 }, key), 404],
      ['queues/worker/messages', postJson({ payload: 'x'.repeat(5000) }, key), 413],
      ['queues/worker/messages', { method: 'POST', headers: { 'content-type': 'text/plain', ...key }, body: 'hello' }, 415],
    ];
    for (const [path, init, status] of cases) {
      const res = await app.api(path, init);
      expect(res.status, `${path} ${String(init.body).slice(0, 40)}`).toBe(status);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      const problem = (await res.json()) as { status: number; title: string; detail: string };
      expect(problem.status).toBe(status);
      expect(problem.detail.length).toBeGreaterThan(0);
    }
    const invalid = await (await app.api('queues/worker/messages', postJson({ payload: 1, id: 'nope' }, key))).json();
    expect(invalid).toMatchObject({ errors: [{ field: 'id', message: 'must be a UUID' }] });
    expect(await stats()).toEqual(before);
  });

  it('curl -d (form content type) with malformed JSON answers the 400 naming the parse error, not a 415 (issue 27)', async () => {
    const before = await stats();
    for (const body of ['{"payload":{"n":1}', "{'payload':1}"]) {
      const res = await app.api('queues/worker/messages', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...key },
        body,
      });
      expect(res.status, body).toBe(400);
      const problem = (await res.json()) as { title: string; detail: string };
      expect(problem.title).toBe('Bad Request');
      expect(problem.detail).toMatch(/^the body is not valid JSON: /);
    }
    expect(await stats()).toEqual(before);
  });

  it('a POST with no body at all answers 411 Length Required saying so (issue 27)', async () => {
    // curl -X POST without -d: no Content-Length, no body (fetch always sends one, so a raw request)
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(app.host.port, '127.0.0.1', () =>
        socket.write(`POST /api/queues/worker/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nx-functions-key: test-key\r\nConnection: close\r\n\r\n`),
      );
      let text = '';
      socket.on('data', (d) => (text += d.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 411/);
    const problem = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { title: string; detail: string };
    expect(problem.title).toBe('Length Required');
    expect(problem.detail).toContain('no body');
  });

  it('a path without the /api prefix answers 404 naming the prefix (issue 27)', async () => {
    const res = await fetch(`${app.url}/queues/worker`, { headers: key });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { detail: string }).detail).toContain('try GET /api/queues/worker');
    const elsewhere = await fetch(`${app.url}/nothing/here`, { headers: key });
    expect(((await elsewhere.json()) as { detail: string }).detail).not.toContain('/api');
  });

  it('curl -d (form content type) with a JSON body is accepted', async () => {
    const res = await app.api('queues/worker/messages', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...key },
      body: '{"payload":{"n":1},"delaySeconds":3600}',
    });
    expect(res.status).toBe(201);
  });
});
