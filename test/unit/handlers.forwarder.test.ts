import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../shared/log';
import { forwardingHandler } from '../../shared/handlers/forwarder';
import { decodeHeaderValue } from '../../shared/handlers/header-value';
import { RawJson } from '../../shared/json/raw-json';
import type { Job } from '../../shared/transport/job';

const job: Job = { id: 'j1', queue: 'worker', payload: { n: 1 }, payloadJson: '{"n":1}', headers: {}, attempt: 2, correlationId: 'c1', createdAt: new Date() };
const ctx = { signal: new AbortController().signal, log: silentLogger };

function fakeFetch(status: number, body: string) {
  const calls: Array<{ url: string; init: RequestInit }> = [];
  const f = (async (url: string, init: RequestInit) => {
    calls.push({ url, init });
    return new Response(body, { status });
  }) as unknown as typeof fetch;
  return { f, calls };
}

describe('HTTP forwarder handler', () => {
  it('POSTs the job and returns a JSON answer as the result', async () => {
    const { f, calls } = fakeFetch(200, '{"ok":true}');
    const result = await forwardingHandler('http://target/jobs', 1000, f)(job, ctx);
    expect(result).toBeInstanceOf(RawJson);
    expect((result as RawJson).text).toBe('{"ok":true}');
    expect(calls[0]!.init.method).toBe('POST');
    expect(JSON.parse(String(calls[0]!.init.body))).toMatchObject({ id: 'j1', attempt: 2, correlationId: 'c1', payload: { n: 1 } });
    expect((calls[0]!.init.headers as Record<string, string>)['x-asyncresponse-job-id']).toBe('j1');
  });

  it('fails with the status in the reason on a non-2xx answer', async () => {
    const { f } = fakeFetch(503, 'busy');
    await expect(forwardingHandler('http://target/jobs', 1000, f)(job, ctx)).rejects.toThrow(/answered 503.*busy/);
  });

  it('sends the payload as it was published and an encoded correlation id header; returns the answer as its text', async () => {
    const payloadJson = '{"a":9007199254740993,"b":1e999,"c":123456789012345678901234567890,"d":0.10000000000000000000001}';
    const correlationId = '№-Кириллица-漢字-😀-\u200f';
    const { f, calls } = fakeFetch(200, ' [123456789012345678901234567890] ');
    const result = await forwardingHandler('http://target/jobs', 1000, f)({ ...job, payload: JSON.parse(payloadJson), payloadJson, correlationId }, ctx);
    expect(String(calls[0]!.init.body)).toContain(`"payload":${payloadJson}}`);
    const header = (calls[0]!.init.headers as Record<string, string>)['x-asyncresponse-correlation-id']!;
    expect(header).toMatch(/^UTF-8''[\x21-\x7e]+$/);
    expect(decodeHeaderValue(header)).toBe(correlationId);
    expect((result as RawJson).text).toBe('[123456789012345678901234567890]');
  });
});
