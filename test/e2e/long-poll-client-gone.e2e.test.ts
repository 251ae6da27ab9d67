// A long-poll client that gives up before waitSeconds (a client timeout, a proxy, a mobile network) must not
// take the response with it: the local host sees the socket close, the waiter stops and removes its subscriber
// row, so a response posted next is stored (not "live" to nobody) and the retried GET gets it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, sleep } from '../support/messages';
import { postJson, startApp, type RunningApp } from './app-harness';

let app: RunningApp;

beforeAll(async () => {
  app = await startApp({ PGLITE_DATA_DIR: 'memory://', LOG_LEVEL: 'error' });
});
afterAll(async () => {
  await app?.close();
});

async function activeWaiters(correlationId: string): Promise<number> {
  const { getRuntime } = await import('../../shared/runtime');
  return (await getRuntime()).channel.store.countActiveSubscribers(correlationId);
}

describe('a long-poll whose client gives up early', () => {
  it('leaves the next response stored for the retried GET instead of delivering it to the closed socket', async () => {
    const id = `gaveup-${Date.now()}`;
    const client = new AbortController();
    const gaveUp = fetch(`${app.url}/api/responses?correlationId=${id}&waitSeconds=20`, { signal: client.signal }).catch((e: Error) => e);
    await eventually(async () => (await activeWaiters(id)) === 1, 'the waiter registered');
    client.abort(); // the client's own timeout, well before waitSeconds
    expect(await gaveUp).toBeInstanceOf(Error);
    // well before its 20 s: a waiter left to the end of waitSeconds would take the response posted meanwhile
    await eventually(async () => (await activeWaiters(id)) === 0, 'the waiter of the closed connection left', 3_000);

    const posted = await app.api('responses', postJson({ correlationId: id, payload: { important: true } }));
    expect(posted.status).toBe(202);
    expect(((await posted.json()) as { delivery: string }).delivery).toBe('stored');
    await sleep(100);
    const retried = await app.api(`responses?correlationId=${id}&waitSeconds=3`);
    expect(retried.status).toBe(200);
    expect(((await retried.json()) as { payload: unknown }).payload).toEqual({ important: true });
  });
});
