import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../../shared/channel/signature';
import { eventually, sleep } from '../support/messages';
import { postJson, startApp, type RunningApp } from './app-harness';

const SECRET = 'test-signing-secret-0123456789';
let app: RunningApp;
let callbackServer: Server;
let callbackFails = false;
const callbacks: Array<{ body: string; signature: string | undefined; status: number; path: string }> = [];

beforeAll(async () => {
  callbackServer = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const status = callbackFails || req.url === '/always-fails' ? 500 : 200;
      callbacks.push({ body, signature: req.headers['x-signature'] as string | undefined, status, path: req.url ?? '' });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => callbackServer.listen(0, '127.0.0.1', r));
  app = await startApp({
    PGLITE_DATA_DIR: 'memory://',
    DRAIN_WORKER_SCHEDULE: '*/1 * * * * *',
    DRAIN_RESPONSES_SCHEDULE: '*/1 * * * * *',
    DRAIN_CALLBACKS_SCHEDULE: '*/1 * * * * *',
    SWEEP_CHANNEL_SCHEDULE: '*/1 * * * * *',
    DRAIN_BUDGET_SECONDS: '5',
    DRAIN_IDLE_GRACE_SECONDS: '0.5',
    DELIVERY_CONFIRMATION_TIMEOUT_MS: '500',
    MAX_DELIVERY_ATTEMPTS: '2',
    REDELIVERY_DELAY_SECONDS: '0',
    CALLBACK_ALLOWED_HOSTS: '127.0.0.1',
    CALLBACK_SIGNING_SECRET: SECRET,
    LOG_LEVEL: 'warn',
  });
});
afterAll(async () => {
  await app?.close();
  await new Promise((r) => callbackServer?.close(r));
});

/** Waits until `n` waiters of the id have registered (their subscriber rows are written): then a publish is live. */
async function waitersRegistered(correlationId: string, n: number): Promise<void> {
  const { getRuntime } = await import('../../shared/runtime'); // the app's own runtime: same process, same module
  const { channel } = await getRuntime();
  await eventually(async () => (await channel.store.countActiveSubscribers(correlationId)) === n, `${n} waiters on '${correlationId}'`);
}

const callbackUrl = (path = '/cb') => `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}${path}`;
const waitFor = (correlationId: string, seconds: number) =>
  app.api(`responses?correlationId=${encodeURIComponent(correlationId)}&waitSeconds=${seconds}`);

describe('correlated responses over HTTP', () => {
  it('a job published with a correlation id → echo → the waiting GET gets its result', async () => {
    const waiting = waitFor('order-1', 20);
    await sleep(200);
    const pub = await app.api('queues/worker/messages', postJson({ payload: { total: 42 }, correlationId: 'order-1' }));
    expect(pub.status).toBe(201);
    const res = await waiting;
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ correlationId: 'order-1', payload: { total: 42 }, final: true });
    expect(body.error).toBeUndefined();
    expect(Date.parse(body.createdAt as string)).not.toBeNaN();
  });

  it('a response that arrives before anyone waits is stored and returned by the next GET, once', async () => {
    const post = await app.api('responses', postJson({ correlationId: 'early-1', payload: { ok: true } }));
    expect(post.status).toBe(202);
    expect(await post.json()).toMatchObject({ delivery: 'stored' });
    const res = await waitFor('early-1', 0);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ correlationId: 'early-1', payload: { ok: true } });
    expect((await waitFor('early-1', 0)).status).toBe(204); // delivered history is never replayed
  });

  it('two concurrent waiters on one id both get the response (fan-out); the publisher sees it live', async () => {
    const a = waitFor('fan-1', 20);
    const b = waitFor('fan-1', 20);
    await waitersRegistered('fan-1', 2); // a fixed pause raced the registrations on a loaded machine
    const post = await app.api('responses', postJson({ correlationId: 'fan-1', payload: 'both' }));
    expect(await post.json()).toMatchObject({ delivery: 'live' });
    const [ra, rb] = await Promise.all([a, b]);
    expect([ra.status, rb.status]).toEqual([200, 200]);
    expect([(await ra.json()) as { payload: unknown }, (await rb.json()) as { payload: unknown }].map((x) => x.payload)).toEqual(['both', 'both']);
  });

  it('a GET with nothing to deliver answers 204 after waitSeconds', async () => {
    const started = Date.now();
    const res = await waitFor('nothing-here', 1);
    expect(res.status).toBe(204);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('ids differing only in case are separate conversations', async () => {
    await app.api('responses', postJson({ correlationId: 'Case-1', payload: 'upper' }));
    expect((await waitFor('case-1', 0)).status).toBe(204);
    expect(await (await waitFor('Case-1', 0)).json()).toMatchObject({ payload: 'upper' });
  });

  it('a retried publish (same id) after delivery is not replayed to a later waiter', async () => {
    const id = '3f0c3a4e-2b1d-4c5e-9f6a-7b8c9d0e1f2a';
    await app.api('responses', postJson({ correlationId: 'retry-1', payload: 1, id }));
    expect((await waitFor('retry-1', 0)).status).toBe(200);
    const again = await app.api('responses', postJson({ correlationId: 'retry-1', payload: 1, id }));
    expect(await again.json()).toMatchObject({ id, duplicate: true });
    expect((await waitFor('retry-1', 0)).status).toBe(204);
    // the same id under another correlation id is a conflict, not a silent duplicate
    const other = await app.api('responses', postJson({ correlationId: 'retry-2', payload: 1, id }));
    expect(other.status).toBe(409);
    expect(((await other.json()) as { detail: string }).detail).toMatch(/already stored under another correlation id/);
    expect((await waitFor('retry-2', 0)).status).toBe(204);
  });

  it('a callback registration receives a response nobody waits for as one signed POST', async () => {
    const reg = await app.api('waiters', postJson({ correlationId: 'cb-1', callbackUrl: callbackUrl('/cb-1') }));
    expect(reg.status).toBe(201);
    const { registrationId, expiresAt } = (await reg.json()) as { registrationId: string; expiresAt: string };
    expect(registrationId).toMatch(/^[0-9a-f-]{36}$/);
    expect(Date.parse(expiresAt) - Date.now()).toBeGreaterThan(6 * 86400_000);
    const post = await app.api('responses', postJson({ correlationId: 'cb-1', payload: { done: true } }));
    expect(await post.json()).toMatchObject({ delivery: 'recovery' });
    const [call] = await eventually(() => {
      const got = callbacks.filter((c) => c.path === '/cb-1');
      return got.length > 0 ? got : undefined;
    }, 'the callback', 10_000);
    expect(JSON.parse(call!.body)).toMatchObject({ correlationId: 'cb-1', payload: { done: true }, final: true });
    expect(verifySignature(SECRET, call!.body, call!.signature)).toBe(true);
    expect(verifySignature('another-secret-0123456789', call!.body, call!.signature)).toBe(false);
    await sleep(2500); // several drain and sweep runs later: still exactly once
    expect(callbacks.filter((c) => c.path === '/cb-1')).toHaveLength(1);
    // a final response consumed the registration
    expect((await app.api(`waiters/${registrationId}?correlationId=cb-1`, { method: 'DELETE' })).status).toBe(404);
  });

  it('a stored response is routed by the sweep to a callback registered after it arrived', async () => {
    const post = await app.api('responses', postJson({ correlationId: 'late-1', payload: 'late' }));
    expect(await post.json()).toMatchObject({ delivery: 'stored' });
    await app.api('waiters', postJson({ correlationId: 'late-1', callbackUrl: callbackUrl('/late-1') }));
    await eventually(() => callbacks.some((c) => c.path === '/late-1' && c.status === 200), 'the sweep-routed callback', 10_000);
    expect((await waitFor('late-1', 0)).status).toBe(204); // recovery owns it now: never also delivered live
  });

  it('a failing callback target is retried, then dead-lettered on the callbacks queue', async () => {
    await app.api('waiters', postJson({ correlationId: 'cb-fail', callbackUrl: callbackUrl('/always-fails') }));
    await app.api('responses', postJson({ correlationId: 'cb-fail', payload: 'x' }));
    const dead = await eventually(async () => {
      const list = (await (await app.api('queues/callbacks/deadletters')).json()) as { items: Array<{ reason: string }> };
      return list.items.length > 0 ? list.items : undefined;
    }, 'the callback dead letter', 15_000);
    expect(dead[0]!.reason).toMatch(/answered 500/);
    expect(callbacks.filter((c) => c.path === '/always-fails').length).toBe(2);
  });

  it('a registration can be deleted; a second delete is a 404', async () => {
    const reg = (await (await app.api('waiters', postJson({ correlationId: 'del-1', callbackUrl: callbackUrl() }))).json()) as { registrationId: string };
    expect((await app.api(`waiters/${reg.registrationId}?correlationId=del-1`, { method: 'DELETE' })).status).toBe(204);
    expect((await app.api(`waiters/${reg.registrationId}?correlationId=del-1`, { method: 'DELETE' })).status).toBe(404);
  });

  it('raw response JSON on the response queue reaches the waiter through its JSON-path correlation id', async () => {
    const waiting = waitFor('ingress-7', 20);
    await sleep(200);
    const pub = await app.api('queues/response/messages', postJson({ payload: { CustomParameters: '{"CorrelationId":"ingress-7"}', Status: 2 } }));
    expect(pub.status).toBe(201);
    const res = await waiting;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ correlationId: 'ingress-7', payload: { Status: 2 } });
  });

  it('waitSeconds over MAX_WAIT_SECONDS is not refused (it is capped); a malformed one is a 400', async () => {
    await app.api('responses', postJson({ correlationId: 'cap-1', payload: 'kept' }));
    const res = await waitFor('cap-1', 9999);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ payload: 'kept' });
    for (const bad of ['', '1e2', '0x10', '-1']) {
      expect((await app.api(`responses?correlationId=cap-1&waitSeconds=${bad}`)).status, bad).toBe(400);
    }
  });

  it('a waiter registration with an unknown field is refused, naming the field', async () => {
    const res = await app.api('waiters', postJson({ correlationId: 'uf-1', callbackUrl: callbackUrl(), bogus: 1 }));
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ errors: [{ field: 'bogus' }] });
  });

  it('a raw response without a usable correlation id is dead-lettered at once with a clear reason', async () => {
    const pub = (await (await app.api('queues/response/messages', postJson({ payload: { Status: 3 } }))).json()) as { id: string };
    const dead = await eventually(async () => {
      const list = (await (await app.api('queues/response/deadletters')).json()) as { items: Array<{ reason: string; payload: unknown }> };
      return list.items.length > 0 ? list.items : undefined;
    }, 'the ingress dead letter', 10_000);
    expect(dead[0]!.reason).toMatch(/no correlation id/);
    expect(dead[0]!.payload).toEqual({ Status: 3 });
    expect(pub.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });

  it('bad input is a 400 problem and stores nothing', async () => {
    const cases: Array<[string, RequestInit | undefined]> = [
      ['responses?correlationId=%20padded&waitSeconds=0', undefined],
      ['responses?correlationId=x&waitSeconds=abc', undefined],
      ['responses', postJson({ correlationId: 'x'.repeat(401), payload: 1 })],
      ['responses', postJson({ correlationId: 'ok', payload: 1, final: 'yes' })],
      ['waiters', postJson({ correlationId: 'w', callbackUrl: 'https://evil.example.com/x' })],
      ['waiters', postJson({ correlationId: 'w', callbackUrl: 'ftp://127.0.0.1/x' })],
      ['waiters', postJson({ correlationId: 'w\u0007', callbackUrl: callbackUrl() })],
      ['waiters', postJson({ correlationId: 'w', callbackUrl: callbackUrl(), ttlSeconds: 0.5 })],
    ];
    for (const [path, init] of cases) {
      const res = await app.api(path, init);
      expect(res.status, path).toBe(400);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
    }
    expect((await waitFor('ok', 0)).status).toBe(204);
  });
});
