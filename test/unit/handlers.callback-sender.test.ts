import { describe, expect, it } from 'vitest';
import { verifySignature } from '../../shared/channel/signature';
import { callbackSender } from '../../shared/handlers/callback-sender';
import { decodeHeaderValue } from '../../shared/handlers/header-value';
import { silentLogger } from '../../shared/log';
import { PermanentJobError, type Job } from '../../shared/transport/job';

const SECRET = 'unit-test-secret-0123456789';
const job = (url = 'https://hooks.example.com/cb'): Job => {
  const payload = { callbackUrl: url, registrationId: 'r1', response: { correlationId: 'c1', id: 'm1', payload: { ok: 1 }, final: true } };
  return { id: 'job-1', queue: 'callbacks', attempt: 1, headers: {}, createdAt: new Date(), payload, payloadJson: JSON.stringify(payload) };
};
const ctx = { signal: new AbortController().signal, log: silentLogger };

function fakeFetch(status: number) {
  const calls: Array<{ url: string; init: RequestInit }> = [];
  const f = (async (url: string, init: RequestInit) => {
    calls.push({ url, init });
    return new Response(status === 204 ? null : '', { status });
  }) as unknown as typeof fetch;
  return { f, calls };
}

describe('callback sender', () => {
  const options = { allowedHosts: ['hooks.example.com'], secret: SECRET, timeoutMs: 1000 };

  it('claims recovery, then POSTs the signed response with a stable delivery id', async () => {
    const claims: string[] = [];
    const { f, calls } = fakeFetch(204);
    await callbackSender(options, { claimForRecovery: async (id) => (claims.push(id), true), isAcknowledged: async () => false }, f)(job(), ctx);
    expect(claims).toEqual(['m1']);
    const headers = calls[0]!.init.headers as Record<string, string>;
    expect(verifySignature(SECRET, String(calls[0]!.init.body), headers['X-Signature'])).toBe(true);
    expect(headers['X-AsyncResponse-Delivery-Id']).toBe('job-1');
    expect(JSON.parse(String(calls[0]!.init.body))).toEqual({ correlationId: 'c1', id: 'm1', payload: { ok: 1 }, final: true });
  });

  it('sends nothing when a live waiter acknowledged the response first (the race guard answers false)', async () => {
    const { f, calls } = fakeFetch(200);
    await callbackSender(options, { claimForRecovery: async () => false, isAcknowledged: async () => true }, f)(job(), ctx);
    expect(calls).toHaveLength(0);
  });

  it('still sends when the response row is gone (retention ran out during retries): nothing is dropped silently', async () => {
    const { f, calls } = fakeFetch(200);
    const checked: string[] = [];
    await callbackSender(options, { claimForRecovery: async () => false, isAcknowledged: async (id) => (checked.push(id), false) }, f)(job(), ctx);
    expect(checked).toEqual(['m1']);
    expect(calls).toHaveLength(1);
    expect(JSON.parse(String(calls[0]!.init.body))).toMatchObject({ correlationId: 'c1', id: 'm1', final: true });
  });

  it('fails the job on a non-2xx answer and refuses a host no longer allowed', async () => {
    const { f } = fakeFetch(502);
    await expect(callbackSender(options, { claimForRecovery: async () => true, isAcknowledged: async () => false }, f)(job(), ctx)).rejects.toThrow(/answered 502/);
    await expect(callbackSender(options, { claimForRecovery: async () => true, isAcknowledged: async () => false }, f)(job('https://other.example.com/x'), ctx)).rejects.toBeInstanceOf(PermanentJobError);
  });

  it('sends the routed response text unchanged (payload numbers as published) with an encoded correlation id header', async () => {
    const correlationId = '№-Кириллица-漢字-😀-\u200f';
    const response = `{"correlationId":${JSON.stringify(correlationId)},"id":"m1","payload":{"a":9007199254740993,"b":1e999},"final":true}`;
    const payloadJson = `{"callbackUrl":"https://hooks.example.com/cb","registrationId":"r1","response":${response}}`;
    const { f, calls } = fakeFetch(200);
    await callbackSender(options, { claimForRecovery: async () => true, isAcknowledged: async () => false }, f)({ ...job(), payload: JSON.parse(payloadJson), payloadJson }, ctx);
    expect(String(calls[0]!.init.body)).toBe(response);
    const headers = calls[0]!.init.headers as Record<string, string>;
    expect(verifySignature(SECRET, response, headers['X-Signature'])).toBe(true);
    expect(decodeHeaderValue(headers['X-AsyncResponse-Correlation-Id']!)).toBe(correlationId);
    expect(headers['X-AsyncResponse-Correlation-Id']).toMatch(/^UTF-8''[\x21-\x7e]+$/);
  });
});
