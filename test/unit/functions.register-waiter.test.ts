// POST /api/waiters beyond MAX_REGISTRATIONS_PER_CORRELATION_ID is a 409 problem that says why; nothing is stored.
import { HttpRequest, InvocationContext } from '@azure/functions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setEnv } from '../support/env';

let shutdownRuntime: (() => Promise<void>) | undefined;
let restoreEnv: (() => void) | undefined;

beforeAll(() => {
  restoreEnv = setEnv({
    PGLITE_DATA_DIR: 'memory://',
    CALLBACK_SIGNING_SECRET: 'unit-test-secret-0123456789',
    CALLBACK_ALLOWED_HOSTS: 'hooks.example.com',
    MAX_REGISTRATIONS_PER_CORRELATION_ID: '2',
  });
});

afterAll(async () => {
  await shutdownRuntime?.();
  restoreEnv?.();
});

describe('POST /api/waiters and the registration cap', () => {
  it('answers 201 up to the cap, then 409 naming the setting, and stores nothing more', { timeout: 120_000 }, async () => {
    const runtime = await import('../../shared/runtime');
    shutdownRuntime = runtime.shutdownRuntime;
    const { registerWaiter } = await import('../../functions/register-waiter');
    const post = () => {
      const body = JSON.stringify({ correlationId: 'capped-1', callbackUrl: 'https://hooks.example.com/cb' });
      const req = new HttpRequest({
        method: 'POST',
        url: 'http://localhost/api/waiters',
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
        body: { string: body },
      });
      return registerWaiter(req, new InvocationContext({ functionName: 'register-waiter' }));
    };
    expect((await post()).status).toBe(201);
    expect((await post()).status).toBe(201);
    const refused = await post();
    expect(refused.status).toBe(409);
    expect(JSON.parse(String(refused.body))).toMatchObject({ status: 409, detail: expect.stringContaining('MAX_REGISTRATIONS_PER_CORRELATION_ID') });
    const rt = await runtime.getRuntime();
    expect(await rt.channel.store.loadRegistrations('capped-1')).toHaveLength(2);
  });
});
