import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleProbe } from '../fixtures/sample-functions';
import { loadFunctionApp, type FunctionTable } from '../../local/functions-core';
import { startLocalHost, type LocalHost, type LocalHostOptions } from '../../local/host';
import { sleep } from '../support/messages';

// The fixture registers through @azure/functions at import time, so it is imported only after
// loadFunctionApp has installed our @azure/functions-core (a static import would run first).
let table: FunctionTable;
let probe: SampleProbe;

beforeAll(async () => {
  table = await loadFunctionApp(async () => {
    const fixture = await import('../fixtures/sample-functions');
    probe = fixture.sampleProbe();
  });
});


async function waitFor<T>(read: () => T | undefined, timeoutMs = 5000): Promise<T> {
  for (const end = Date.now() + timeoutMs; Date.now() < end; await sleep(10)) {
    const value = read();
    if (value !== undefined) return value;
  }
  throw new Error('timed out waiting');
}

async function start(options: Partial<LocalHostOptions> = {}): Promise<{ host: LocalHost; logs: string[] }> {
  const logs: string[] = [];
  const host = await startLocalHost({ table, port: 0, timers: false, logger: (l) => logs.push(l), ...options });
  return { host, logs };
}

async function problem(res: Response): Promise<{ status: number; title: string; detail?: string }> {
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  const text = await res.text();
  expect(text.endsWith('\n'), 'a JSON answer ends with a newline').toBe(true);
  return JSON.parse(text) as { status: number; title: string };
}

describe('function registration capture', () => {
  it('registers through the real library, not its test mode', () => {
    expect(table.programmingModel?.name).toBe('@azure/functions');
  });

  it('captures names, routes, methods, auth levels, schedules and hooks', () => {
    const http = table.http.map(({ name, route, methods, authLevel }) => ({ name, route, methods, authLevel }));
    expect(http).toEqual([
      { name: 'getItem', route: 'items/{id}', methods: ['GET'], authLevel: 'function' },
      { name: 'deleteItem', route: 'items/{id}', methods: ['DELETE'], authLevel: 'function' },
      { name: 'echo', route: 'echo', methods: ['POST'], authLevel: 'function' },
      // No route: the function name. No methods: the library's GET and POST.
      { name: 'ping', route: 'ping', methods: ['GET', 'HEAD'], authLevel: 'anonymous' },
      { name: 'secret', route: 'secret', methods: ['GET'], authLevel: 'function' },
      { name: 'boom', route: 'boom', methods: ['GET', 'POST'], authLevel: 'anonymous' },
      { name: 'slow', route: 'slow', methods: ['GET'], authLevel: 'anonymous' },
    ]);
    expect(table.timers.map(({ name, schedule, runOnStartup }) => ({ name, schedule, runOnStartup }))).toEqual([
      { name: 'tick', schedule: '*/1 * * * * *', runOnStartup: false },
    ]);
    expect(table.other).toEqual([]);
    expect(table.hooks.map((h) => h.name)).toEqual(['appStart', 'appTerminate']);
    expect(typeof table.http[0]?.handler).toBe('function');
  });
});

describe('local host HTTP', () => {
  let host: LocalHost;
  let logs: string[];
  let api: string;

  beforeAll(async () => {
    ({ host, logs } = await start({ maxBodyBytes: 1024 }));
    api = `${host.url}/api`;
  });
  afterAll(() => host.close());

  it('passes route params, repeated query keys and headers through', async () => {
    const res = await fetch(`${api}/items/a%20b?verbose=yes&tag=x&tag=y`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('x-item-id')).toBe('a b');
    expect(await res.json()).toEqual({ id: 'a b', verbose: 'yes', tags: ['x', 'y'] });
  });

  it('passes a JSON body and maps status and jsonBody', async () => {
    const res = await fetch(`${api}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ hello: 'world', n: 1 }),
    });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ received: { hello: 'world', n: 1 }, contentType: 'application/json' });
  });

  it('maps an HttpResponse: status, text body, headers, cookies; HEAD has no body', async () => {
    const res = await fetch(`${api}/ping`);
    expect(res.status).toBe(202);
    expect(res.headers.get('content-type')).toBe('text/plain');
    expect(res.headers.get('set-cookie')).toBe('session=abc; HttpOnly');
    expect(await res.text()).toBe('pong');
    const head = await fetch(`${api}/ping`, { method: 'HEAD' });
    expect(head.status).toBe(202);
    expect(await head.text()).toBe('');
  });

  it('answers 204 when a handler returns nothing', async () => {
    const res = await fetch(`${api}/items/7`, { method: 'DELETE' });
    expect(res.status).toBe(204);
  });

  it('matches literal route segments without regard to case', async () => {
    expect((await fetch(`${host.url}/API/PING`)).status).toBe(202);
  });

  it('answers 404 problem+json when no route matches', async () => {
    for (const url of [`${api}/nope`, `${api}/items/1/extra`, `${host.url}/ping`]) {
      const res = await fetch(url);
      expect(res.status).toBe(404);
      expect((await problem(res)).title).toBe('Not Found');
    }
  });

  it('answers 404 when the route exists but not the method, as Azure does (naming the methods it accepts)', async () => {
    const res = await fetch(`${api}/items/1`, { method: 'PUT' });
    expect(res.status).toBe(404);
    expect((await problem(res)).detail).toBe('No function serves PUT /api/items/1 (it accepts GET, DELETE).');
  });

  it('drops a request body sent without Content-Length (chunked), as Azure does', async () => {
    const { Readable } = await import('node:stream');
    const res = await fetch(`${api}/echo`, {
      method: 'POST',
      body: Readable.toWeb(Readable.from([Buffer.from('{"a":1}')])) as ReadableStream,
      duplex: 'half',
    } as RequestInit);
    const echoed = await fetch(`${api}/echo`, { method: 'POST', body: '{"a":1}' });
    expect(echoed.status).toBe(201);
    expect(await echoed.json()).toMatchObject({ received: { a: 1 } });
    // the fixture parses the body: an empty one fails it (500), as it would on Azure; the host says why
    expect(res.status).toBe(500);
    await res.arrayBuffer();
    expect(logs.some((l) => l.includes('POST /api/echo: a body without Content-Length (chunked) is dropped, as Azure Functions does'))).toBe(true);
  });

  it('answers 500 problem+json when the handler throws, and logs the failure', async () => {
    const res = await fetch(`${api}/boom`);
    expect(res.status).toBe(500);
    expect((await problem(res)).title).toBe('Internal Server Error');
    expect(logs.some((l) => /Executed 'Functions\.boom' \(Failed, Id=[0-9a-f-]{36}, Duration=\d+ms\)/.test(l))).toBe(true);
    expect(logs.some((l) => l.includes('[boom]') && l.includes('kaboom'))).toBe(true);
  });

  it('answers 413 problem+json for a body over the host limit', async () => {
    const res = await fetch(`${api}/echo`, { method: 'POST', body: 'x'.repeat(2048) });
    expect(res.status).toBe(413);
    expect((await problem(res)).status).toBe(413);
  });

  it('needs no key when none is configured', async () => {
    expect((await fetch(`${api}/secret`)).status).toBe(200);
  });

  it('logs every invocation and the handler logs', async () => {
    await fetch(`${api}/items/42`);
    const executing = logs.find((l) => l.includes("Executing 'Functions.getItem'") && l.includes('/api/items/42'));
    expect(executing).toMatch(/^\[\d{4}-\d\d-\d\dT[^\]]+Z\] Executing 'Functions\.getItem' \(Reason='HTTP GET \/api\/items\/42', Id=[0-9a-f-]{36}\)$/);
    const id = /Id=([0-9a-f-]{36})/.exec(executing ?? '')?.[1];
    expect(logs.some((l) => l.endsWith('[getItem] getting item 42'))).toBe(true);
    expect(logs.some((l) => l.includes(`Executed 'Functions.getItem' (Succeeded, Id=${id}, Duration=`))).toBe(true);
  });
});

describe('local host function keys', () => {
  let host: LocalHost;
  beforeAll(async () => ({ host } = await start({ functionKey: 'sekret' })));
  afterAll(() => host.close());

  it('requires the key on function-level routes, by header or ?code=', async () => {
    const url = `${host.url}/api/secret`;
    const missing = await fetch(url);
    expect(missing.status).toBe(401);
    expect((await problem(missing)).title).toBe('Unauthorized');
    expect((await fetch(url, { headers: { 'x-functions-key': 'wrong' } })).status).toBe(401);
    expect((await fetch(`${url}?code=wrong`)).status).toBe(401);
    expect((await fetch(url, { headers: { 'x-functions-key': 'sekret' } })).status).toBe(200);
    expect((await fetch(`${url}?code=sekret`)).status).toBe(200);
  });

  it('leaves anonymous routes open', async () => {
    expect((await fetch(`${host.url}/api/ping`)).status).toBe(202);
  });
});

describe('local host lifecycle', () => {
  it('runs appStart before serving and appTerminate after close', async () => {
    const before = probe.hooks.length;
    const { host } = await start();
    expect(probe.hooks.slice(before)).toEqual(['appStart']);
    await host.close();
    expect(probe.hooks.slice(before)).toEqual(['appStart', 'appTerminate']);
  });

  it('close() runs appTerminate at once and waits for an in-flight request before it resolves', async () => {
    const { host } = await start();
    const before = probe.hooks.length;
    probe.slowRelease = undefined;
    const pending = fetch(`${host.url}/api/slow`);
    const release = await waitFor(() => probe.slowRelease);
    let closed = false;
    const closing = host.close().then(() => (closed = true));
    await sleep(300);
    expect(closed).toBe(false);
    // appTerminate runs while the invocation is still in flight (the worker's WorkerTerminate order): it is
    // the app's cue to stop long work, and close() still waits for the invocation.
    expect(probe.hooks.slice(before)).toEqual(['appTerminate']);
    release();
    const res = await pending;
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('finally');
    await closing;
    expect(probe.hooks.slice(before)).toEqual(['appTerminate']);
  });
});

describe('local host timers', () => {
  it('fires a */1 timer on consecutive seconds, with a Timer object', async () => {
    probe.timerRuns.length = 0;
    probe.timerDelayMs = 0;
    const { host, logs } = await start({ timers: true, timerLog: true });
    try {
      // two runs take about 2 s; the generous bound only matters on a starved machine
      await waitFor(() => (probe.timerRuns.length >= 2 ? true : undefined), 10_000);
    } finally {
      await host.close(); // also when waitFor gives up: a leaked timer would feed the next test
    }
    const [first, second] = probe.timerRuns;
    // one second apart (a */1 schedule), with room for a loaded machine
    expect(second!.start - first!.start).toBeGreaterThan(500);
    expect(second!.start - first!.start).toBeLessThan(3000);
    expect(first?.isPastDue).toBe(false);
    expect(first?.last).toBe('0001-01-01T00:00:00.000Z');
    expect(Date.parse(second?.last ?? '')).toBeLessThan(Date.parse(second?.next ?? ''));
    expect(logs.some((l) => /Executing 'Functions\.tick' \(Reason='Timer fired at [^']+', Id=[0-9a-f-]{36}\)/.test(l))).toBe(true);
    expect(logs.some((l) => l.includes("Executed 'Functions.tick' (Succeeded"))).toBe(true);
  });

  it('never overlaps itself when a run outlasts the interval', async () => {
    probe.timerRuns.length = 0;
    probe.timerMaxActive = 0;
    probe.timerDelayMs = 1500;
    const { host } = await start({ timers: true });
    try {
      // a 1.5 s run on a 1 s schedule: slots missed during it collapse into a past-due run (about 3 s in)
      await waitFor(() => (probe.timerRuns.length >= 2 && probe.timerRuns.some((r) => r.isPastDue) ? true : undefined), 15_000);
    } finally {
      await host.close(); // waits for the run in progress
      probe.timerDelayMs = 0;
    }
    expect(probe.timerMaxActive).toBe(1);
    for (let i = 1; i < probe.timerRuns.length; i++) {
      expect(probe.timerRuns[i]!.start).toBeGreaterThanOrEqual(probe.timerRuns[i - 1]!.end);
    }
  });

  it('stops firing after close()', async () => {
    probe.timerRuns.length = 0;
    const { host } = await start({ timers: true });
    await host.close();
    await sleep(1200);
    expect(probe.timerRuns.length).toBe(0);
  });
});
