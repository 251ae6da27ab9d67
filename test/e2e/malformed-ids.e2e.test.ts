// Issue 18: a malformed (non-UUID) id answered 404 on requeue and delete of a dead letter and on deleting a waiter,
// but 400 on publish. One rule: a malformed id is a 400 problem+json naming the field, everywhere; a well-formed id
// that names nothing stays a 404. Every answer is checked against the OpenAPI document by the harness.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, startApp, type RunningApp } from './app-harness';

let app: RunningApp;
beforeAll(async () => {
  app = await startApp({ PGLITE_DATA_DIR: 'memory://', LOG_LEVEL: 'warn' });
});
afterAll(async () => {
  await app?.close();
});

async function problemOf(res: Response) {
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  return (await res.json()) as { status: number; detail: string; errors?: Array<{ field: string; message: string }> };
}

describe('a malformed id is a 400 everywhere', () => {
  it('publish (the rule the others follow)', async () => {
    const res = await app.api('queues/worker/messages', postJson({ id: 'abc', payload: 1 }));
    expect(res.status).toBe(400);
    expect((await problemOf(res)).errors).toContainEqual({ field: 'id', message: 'must be a UUID' });
  });

  for (const [what, method, path, field] of [
    ['requeue of a dead letter', 'POST', 'queues/worker/deadletters/abc/requeue', 'id'],
    ['delete of a dead letter', 'DELETE', 'queues/worker/deadletters/not-a-uuid', 'id'],
    ['delete of a waiter', 'DELETE', 'waiters/not-a-uuid?correlationId=c-1', 'registrationId'],
  ] as const) {
    it(what, async () => {
      const res = await app.api(path, { method });
      expect(res.status).toBe(400);
      const body = await problemOf(res);
      expect(body.status).toBe(400);
      expect(body.errors).toEqual([{ field, message: 'must be a UUID' }]);
    });
  }

  it('a well-formed id that names nothing is still a 404', async () => {
    const id = '0f90ca46-76ab-4e35-8c8b-f45638963c75';
    expect((await app.api(`queues/worker/deadletters/${id}/requeue`, { method: 'POST' })).status).toBe(404);
    expect((await app.api(`queues/worker/deadletters/${id}`, { method: 'DELETE' })).status).toBe(404);
    expect((await app.api(`waiters/${id}?correlationId=c-1`, { method: 'DELETE' })).status).toBe(404);
  });
});
