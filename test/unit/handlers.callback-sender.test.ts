import { describe, expect, it } from 'vitest';
import { buildEnvelope } from '../../shared/channel/envelope';
import { verifySignature } from '../../shared/channel/signature';
import { callbackDeadLetterHold, callbackRowHoldMs, callbackSender } from '../../shared/handlers/callback-sender';
import { loadConfig } from '../../shared/settings';
import { decodeHeaderValue } from '../../shared/handlers/header-value';
import { RawJson } from '../../shared/json/raw-json';
import { silentLogger } from '../../shared/log';
import { PermanentJobError, type Job } from '../../shared/transport/job';

const SECRET = 'unit-test-secret-0123456789';
const registration = (url: string) => JSON.stringify({ SchemaVersion: 1, RegistrationId: 'r1', CorrelationId: 'c1', CallbackUrl: url });
/** A reference job, as routing writes it (the payload stays in the message row). */
const job = (url = 'https://hooks.example.com/cb'): Job => ({
  id: 'job-1',
  queue: 'callbacks',
  attempt: 1,
  headers: {},
  createdAt: new Date(),
  payload: { messageId: 'm1', correlationId: 'c1', registrationId: 'r1', registration: registration(url) },
  payloadJson: JSON.stringify({ messageId: 'm1', correlationId: 'c1', registrationId: 'r1', registration: registration(url) }),
});
/** A job an earlier version enqueued: it carries its own copy of the response. */
const legacyJob = (url = 'https://hooks.example.com/cb'): Job => {
  const payload = { callbackUrl: url, registrationId: 'r1', response: { correlationId: 'c1', id: 'm1', payload: { ok: 1 }, final: true } };
  return { ...job(url), payload, payloadJson: JSON.stringify(payload) };
};
const ctx = { signal: new AbortController().signal, log: silentLogger };
const ENVELOPE = buildEnvelope({ payload: { ok: 1 }, final: true });

function fakeFetch(status: number) {
  const calls: Array<{ url: string; init: RequestInit }> = [];
  const f = (async (url: string, init: RequestInit) => {
    calls.push({ url, init });
    return new Response(status === 204 ? null : '', { status });
  }) as unknown as typeof fetch;
  return { f, calls };
}

/** A row that is there (envelope), acknowledged, or gone. */
function rowStore(state: 'stored' | 'acked' | 'gone', envelope = ENVELOPE) {
  const holds: Array<[string, number]> = [];
  return {
    holds,
    store: {
      holdForCallback: async (id: string, ms: number) => (holds.push([id, ms]), state === 'stored' ? envelope : null),
      isAcknowledged: async () => state === 'acked',
    },
  };
}

describe('callback sender', () => {
  const options = { allowedHosts: ['hooks.example.com'], secret: SECRET, timeoutMs: 1000, holdMs: 7_200_000 };

  it('claims recovery and holds the row, then POSTs the stored response signed, with a stable delivery id', async () => {
    const { store, holds } = rowStore('stored');
    const { f, calls } = fakeFetch(204);
    await callbackSender(options, store, f)(job(), ctx);
    expect(holds).toEqual([['m1', 7_200_000]]);
    expect(calls[0]!.url).toBe('https://hooks.example.com/cb');
    const headers = calls[0]!.init.headers as Record<string, string>;
    expect(verifySignature(SECRET, String(calls[0]!.init.body), headers['X-Signature'])).toBe(true);
    expect(headers['X-AsyncResponse-Delivery-Id']).toBe('job-1');
    expect(JSON.parse(String(calls[0]!.init.body))).toEqual({ correlationId: 'c1', id: 'm1', payload: { ok: 1 }, final: true });
  });

  it('sends nothing when a live waiter acknowledged the response first (the race guard answers false)', async () => {
    const { f, calls } = fakeFetch(200);
    await callbackSender(options, rowStore('acked').store, f)(job(), ctx);
    await callbackSender(options, rowStore('acked').store, f)(legacyJob(), ctx);
    expect(calls).toHaveLength(0);
  });

  it('a job carrying its own copy (an earlier version) is still sent when the row is gone: nothing is dropped silently', async () => {
    const { f, calls } = fakeFetch(200);
    await callbackSender(options, rowStore('gone').store, f)(legacyJob(), ctx);
    expect(calls).toHaveLength(1);
    expect(JSON.parse(String(calls[0]!.init.body))).toEqual({ correlationId: 'c1', id: 'm1', payload: { ok: 1 }, final: true });
  });

  it('a reference job whose row is gone is dead-lettered with the reason, never acked silently', async () => {
    const { f, calls } = fakeFetch(200);
    const run = callbackSender(options, rowStore('gone').store, f)(job(), ctx);
    await expect(run).rejects.toBeInstanceOf(PermanentJobError);
    await expect(run).rejects.toThrow(/no longer stored/);
    expect(calls).toHaveLength(0);
  });

  it('an unreadable registration or an unknown job shape is a permanent failure (a visible dead letter)', async () => {
    const { f } = fakeFetch(200);
    const send = callbackSender(options, rowStore('stored').store, f);
    await expect(send({ ...job(), payload: { messageId: 'm1', correlationId: 'c1', registrationId: 'r1', registration: '{not json' } }, ctx)).rejects.toThrow(/unreadable/);
    await expect(send({ ...job(), payload: { something: 'else' } }, ctx)).rejects.toBeInstanceOf(PermanentJobError);
  });

  it('fails the job on a non-2xx answer and refuses a host no longer allowed', async () => {
    const { f } = fakeFetch(502);
    await expect(callbackSender(options, rowStore('stored').store, f)(job(), ctx)).rejects.toThrow(/answered 502/);
    await expect(callbackSender(options, rowStore('stored').store, f)(job('https://other.example.com/x'), ctx)).rejects.toBeInstanceOf(PermanentJobError);
  });

  it('holds the row past the next attempt by a whole retention; a dead letter holds it as long as dead letters are kept', async () => {
    const cfg = loadConfig({ MESSAGE_RETENTION_SECONDS: '3600', REDELIVERY_MAX_DELAY_SECONDS: '300', LOCK_TIMEOUT_SECONDS: '30' });
    expect(callbackRowHoldMs(cfg)).toBe(3_930_000);
    const { store, holds } = rowStore('stored');
    await callbackDeadLetterHold(store, 14 * 86_400_000).onDeadLettered!(job(), {} as never, 'answered 500', {});
    expect(holds).toEqual([['m1', 14 * 86_400_000]]);
  });

  it('sends the stored payload text unchanged (numbers as published) with an encoded correlation id header', async () => {
    const correlationId = '№-Кириллица-漢字-😀-\u200f';
    const payloadText = '{"a":9007199254740993,"b":1e999}';
    const envelope = buildEnvelope({ payload: new RawJson(payloadText), final: true });
    const { f, calls } = fakeFetch(200);
    const ref = { messageId: 'm1', correlationId, registrationId: 'r1', registration: registration('https://hooks.example.com/cb') };
    await callbackSender(options, rowStore('stored', envelope).store, f)({ ...job(), payload: ref, payloadJson: JSON.stringify(ref) }, ctx);
    const body = String(calls[0]!.init.body);
    expect(body).toBe(`{"correlationId":${JSON.stringify(correlationId)},"id":"m1","payload":${payloadText},"final":true}`);
    const headers = calls[0]!.init.headers as Record<string, string>;
    expect(verifySignature(SECRET, body, headers['X-Signature'])).toBe(true);
    expect(decodeHeaderValue(headers['X-AsyncResponse-Correlation-Id']!)).toBe(correlationId);
    expect(headers['X-AsyncResponse-Correlation-Id']).toMatch(/^UTF-8''[\x21-\x7e]+$/);
  });

  it('a carried copy goes out as routed, text unchanged', async () => {
    const response = '{"correlationId":"c1","id":"m1","payload":{"a":9007199254740993,"b":1e999},"final":true}';
    const payloadJson = `{"callbackUrl":"https://hooks.example.com/cb","registrationId":"r1","response":${response}}`;
    const { f, calls } = fakeFetch(200);
    await callbackSender(options, rowStore('gone').store, f)({ ...job(), payload: JSON.parse(payloadJson), payloadJson }, ctx);
    expect(String(calls[0]!.init.body)).toBe(response);
  });
});
