import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../shared/log';
import { forwardingHandler } from '../../shared/handlers/forwarder';
import { decodeHeaderValue } from '../../shared/handlers/header-value';
import { RawJson } from '../../shared/json/raw-json';
import type { HttpPost } from '../../shared/handlers/http-post';
import type { Job } from '../../shared/transport/job';

const job: Job = { id: 'j1', queue: 'worker', payload: { n: 1 }, payloadJson: '{"n":1}', headers: {}, attempt: 2, correlationId: 'c1', createdAt: new Date() };
const ctx = { signal: new AbortController().signal, log: silentLogger };

function fakePost(status: number, body: string) {
  const calls: Array<{ url: URL; init: { method: string; headers: Record<string, string>; body: string } }> = [];
  const f: HttpPost = async (url, headers, text) => {
    calls.push({ url, init: { method: 'POST', headers, body: text } });
    return { status, statusText: status === 503 ? 'Service Unavailable' : 'OK', text: body };
  };
  return { f, calls };
}

describe('HTTP forwarder handler', () => {
  it('POSTs the job and returns a JSON answer as the result', async () => {
    const { f, calls } = fakePost(200, '{"ok":true}');
    const result = await forwardingHandler('http://target/jobs', 1000, f)(job, ctx);
    expect(result).toBeInstanceOf(RawJson);
    expect((result as RawJson).text).toBe('{"ok":true}');
    expect(calls[0]!.init.method).toBe('POST');
    expect(String(calls[0]!.url)).toBe('http://target/jobs');
    expect(JSON.parse(String(calls[0]!.init.body))).toMatchObject({ id: 'j1', attempt: 2, correlationId: 'c1', payload: { n: 1 } });
    expect((calls[0]!.init.headers as Record<string, string>)['x-asyncresponse-job-id']).toBe('j1');
  });

  it('fails with the status in the reason on a non-2xx answer', async () => {
    const { f } = fakePost(503, 'busy');
    await expect(forwardingHandler('http://target/jobs', 1000, f)(job, ctx)).rejects.toThrow(/answered 503.*busy/);
  });

  it('sends the payload as it was published and an encoded correlation id header; returns the answer as its text', async () => {
    const payloadJson = '{"a":9007199254740993,"b":1e999,"c":123456789012345678901234567890,"d":0.10000000000000000000001}';
    const correlationId = '№-Кириллица-漢字-😀-\u200f';
    const { f, calls } = fakePost(200, ' [123456789012345678901234567890] ');
    const result = await forwardingHandler('http://target/jobs', 1000, f)({ ...job, payload: JSON.parse(payloadJson), payloadJson, correlationId }, ctx);
    expect(String(calls[0]!.init.body)).toContain(`"payload":${payloadJson}}`);
    const header = (calls[0]!.init.headers as Record<string, string>)['x-asyncresponse-correlation-id']!;
    expect(header).toMatch(/^UTF-8''[\x21-\x7e]+$/);
    expect(decodeHeaderValue(header)).toBe(correlationId);
    expect((result as RawJson).text).toBe('[123456789012345678901234567890]');
  });
});

describe('HTTP forwarder handler: timeouts and lease loss', () => {
  // a target that never answers: resolves only when the request's signal aborts
  const hanging =
    (seen: { signal?: AbortSignal }): HttpPost =>
    async (_url, _headers, _body, signal) => {
      seen.signal = signal;
      return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
    };

  it('a target that does not answer within the timeout fails the job naming the timeout', async () => {
    const seen: { signal?: AbortSignal } = {};
    const started = Date.now();
    await expect(forwardingHandler('http://target/jobs', 50, hanging(seen))(job, ctx)).rejects.toThrow('forward to http://target/jobs timed out after 50 ms');
    expect(Date.now() - started).toBeLessThan(1000);
    expect(seen.signal?.aborted).toBe(true);
  });

  it('a lost lease aborts the request at once; the listener is removed after every forward', async () => {
    const lease = new AbortController();
    const seen: { signal?: AbortSignal } = {};
    const pending = forwardingHandler('http://target/jobs', 60_000, hanging(seen))(job, { signal: lease.signal, log: silentLogger });
    lease.abort(new Error('lease lost'));
    await expect(pending).rejects.toThrow('forward to http://target/jobs failed: lease lost');

    const long = new AbortController();
    const { f } = fakePost(200, '{}');
    for (let i = 0; i < 20; i++) await forwardingHandler('http://target/jobs', 60_000, f)(job, { signal: long.signal, log: silentLogger });
    const { EventEmitter } = await import('node:events');
    expect(EventEmitter.getEventListeners(long.signal, 'abort')).toHaveLength(0);
  });
});
