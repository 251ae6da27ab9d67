// The local host against hostile or broken clients: malformed Host headers, an oversized declared body,
// a client that aborts mid-body while sending the key as ?code=.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadFunctionApp, type FunctionTable } from '../../local/functions-core';
import { startLocalHost, type LocalHost } from '../../local/host';
import { sleep } from '../support/messages';

let table: FunctionTable;
let host: LocalHost;
const logs: string[] = [];

beforeAll(async () => {
  table = await loadFunctionApp(async () => {
    await import('../fixtures/sample-functions');
  });
  host = await startLocalHost({ table, port: 0, timers: false, logger: (l) => logs.push(l), functionKey: 'sekret-key', maxBodyBytes: 1024 });
});
afterAll(() => host?.close());

/** Sends `head` (and `body`, if any) over a raw socket and resolves with what came back until `until` matches or the socket ends. */
function raw(head: string, body = '', o: { until?: RegExp; abortAfterMs?: number; timeoutMs?: number } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(host.port, '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(received);
    }, o.timeoutMs ?? 3000);
    socket.on('data', (d) => {
      received += d.toString('latin1');
      if (o.until?.test(received)) {
        clearTimeout(timer);
        socket.destroy();
        resolve(received);
      }
    });
    socket.on('error', (err) => (received === '' ? reject(err) : undefined));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    });
    socket.write(head + body);
    if (o.abortAfterMs !== undefined) setTimeout(() => socket.destroy(), o.abortAfterMs);
  });
}

const statusOf = (answer: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0);
const WHOLE_ANSWER = /\r\n\r\n[\s\S]*\}$/;

describe('malformed Host headers', () => {
  for (const hostHeader of ['a b', 'x:99999', '%', '[::1', 'a@b', 'x:-1', 'a/b']) {
    it(`answers 400 problem+json for Host: ${JSON.stringify(hostHeader)}, and keeps serving`, async () => {
      const answer = await raw(`GET /api/ping HTTP/1.1\r\nHost: ${hostHeader}\r\nConnection: close\r\n\r\n`);
      expect(statusOf(answer), answer).toBe(400);
      expect(answer).toMatch(/content-type: application\/problem\+json/i);
      expect(answer).toMatch(/"title":"Bad Request"/);
    });
  }

  it('still serves well-formed hosts: names, IPv4, IPv6 literals, with and without a port', async () => {
    for (const hostHeader of ['localhost', 'localhost:7071', '127.0.0.1:80', '[::1]', '[::1]:8080', 'my-app.azurewebsites.net']) {
      const answer = await raw(`GET /api/ping HTTP/1.1\r\nHost: ${hostHeader}\r\nConnection: close\r\n\r\n`);
      expect(statusOf(answer), hostHeader).toBe(202);
    }
    // HTTP/1.0 needs no Host: the bound address stands in
    expect(statusOf(await raw('GET /api/ping HTTP/1.0\r\n\r\n'))).toBe(202);
  });

  it('answers 400 for a request target the URL parser refuses (//a%/…), not 500', async () => {
    const answer = await raw('GET //a%/api/ping HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    expect(statusOf(answer), answer).toBe(400);
  });
});

describe('an oversized declared body', () => {
  it('answers 413 at once from Content-Length, without waiting for the body', async () => {
    const head =
      'POST /api/echo HTTP/1.1\r\nHost: localhost\r\nx-functions-key: sekret-key\r\ncontent-type: application/json\r\n' +
      `content-length: ${50 * 1024 * 1024}\r\n\r\n`;
    // only 10 bytes of the declared 50 MiB are sent: a host that reads the body first never answers
    const started = Date.now();
    const answer = await raw(head, '{"a":"bcd', { until: WHOLE_ANSWER, timeoutMs: 3000 });
    expect(statusOf(answer), answer).toBe(413);
    expect(answer).toMatch(/connection: close/i);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('still answers 413 to a real client that sends the whole oversized body', async () => {
    const res = await fetch(`${host.url}/api/echo`, { method: 'POST', headers: { 'x-functions-key': 'sekret-key' }, body: 'x'.repeat(64 * 1024) });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { status: number }).status).toBe(413);
  });
});

describe('function keys never reach the log', () => {
  it('a client that aborts mid-body with ?code= leaves no key in the log', async () => {
    const before = logs.length;
    const head = 'POST /api/echo?code=sekret-key&x=1 HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n';
    await raw(head, '{"half":', { abortAfterMs: 100 });
    for (let i = 0; i < 50 && !logs.slice(before).some((l) => l.includes('went away')); i++) await sleep(20);
    const written = logs.slice(before);
    expect(written.some((l) => l.includes('POST /api/echo') && l.includes('went away')), written.join('\n')).toBe(true);
    expect(written.join('\n')).not.toContain('sekret-key');
  });

  it('a wrong key is refused whatever its length, and the right one accepted', async () => {
    const url = `${host.url}/api/secret`;
    for (const key of ['', 's', 'sekret-ke', 'sekret-keyy', 'x'.repeat(5000), 'SEKRET-KEY']) {
      expect((await fetch(url, { headers: { 'x-functions-key': key } })).status, key).toBe(401);
    }
    expect((await fetch(url, { headers: { 'x-functions-key': 'sekret-key' } })).status).toBe(200);
  });
});
