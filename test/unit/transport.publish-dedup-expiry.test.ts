// The publish fields of issue 16 §3: dedupKey / dedupWindowSeconds / dedupMode and expiresAt / ttlSeconds, as the
// HTTP route and the engine API both validate them (parsePublishBody), and how a batch splits into key rounds.

import { describe, expect, it } from 'vitest';
import { dedupRounds, EXPIRES_AT_HEADER, expiresAt, isExpired } from '../../shared/transport/dedup';
import { parsePublishBody } from '../../shared/transport/publish-request';
import { message } from '../support/messages';

const MAX = 1000;
const NOW = Date.parse('2026-12-02T10:00:00.000Z');
const parse = (body: unknown, options: { dedup?: boolean } = {}) => parsePublishBody(body, 'worker', MAX, undefined, { ...options, now: () => NOW });
const errorsOf = (body: unknown, options: { dedup?: boolean } = {}) => {
  const r = parse(body, options);
  if (r.ok) throw new Error('expected a rejection');
  expect(r.status).toBe(400);
  return r.errors;
};

describe('dedup fields', () => {
  it('a key with its window becomes the message dedup spec; the mode defaults to drop', () => {
    const r = parse({ payload: 1, dedupKey: 'order-17', dedupWindowSeconds: 1.5 });
    expect(r.ok && r.messages[0]!.dedup).toEqual({ key: 'order-17', windowMs: 1500, mode: 'drop' });
    const d = parse({ payload: 1, dedupKey: 'k', dedupWindowSeconds: 60, dedupMode: 'debounce', delaySeconds: 5 });
    expect(d.ok && d.messages[0]).toMatchObject({ dedup: { key: 'k', windowMs: 60_000, mode: 'debounce' }, delayMs: 5000 });
    // nothing of it lands in the headers: the dedup table holds the key
    expect(d.ok && d.messages[0]!.headers).toEqual({});
    const none = parse({ payload: 1 });
    expect(none.ok && 'dedup' in none.messages[0]!).toBe(false);
  });

  it('refuses a missing, negative, zero or too long window, an unknown mode and a bad key, each by its field', () => {
    expect(errorsOf({ payload: 1, dedupKey: 'k' })).toEqual([{ field: 'dedupWindowSeconds', message: 'is required with a dedupKey' }]);
    for (const w of [-1, 0, 30 * 86400 + 1, '60', Number.NaN]) {
      expect(errorsOf({ payload: 1, dedupKey: 'k', dedupWindowSeconds: w }).map((e) => e.field), String(w)).toEqual(['dedupWindowSeconds']);
    }
    expect(errorsOf({ payload: 1, dedupKey: 'k', dedupWindowSeconds: 1, dedupMode: 'replace' })).toEqual([
      { field: 'dedupMode', message: 'must be one of drop, debounce' },
    ]);
    for (const key of ['', 'x'.repeat(201), 7, 'a\nb', '\ud800']) {
      expect(errorsOf({ payload: 1, dedupKey: key, dedupWindowSeconds: 1 }).map((e) => e.field), JSON.stringify(key)).toEqual(['dedupKey']);
    }
    expect(parse({ payload: 1, dedupKey: 'x'.repeat(200), dedupWindowSeconds: 30 * 86400 }).ok).toBe(true);
  });

  it('a window or mode without a key is refused, and a topic publish refuses every dedup field', () => {
    expect(errorsOf({ payload: 1, dedupWindowSeconds: 5, dedupMode: 'drop' })).toEqual([
      { field: 'dedupWindowSeconds', message: 'needs a dedupKey' },
      { field: 'dedupMode', message: 'needs a dedupKey' },
    ]);
    const topic = errorsOf({ payload: 1, dedupKey: 'k', dedupWindowSeconds: 5 }, { dedup: false });
    expect(topic.map((e) => e.field)).toEqual(['dedupKey', 'dedupWindowSeconds']);
    expect(topic[0]!.message).toMatch(/dedup keys belong to a queue publish/);
  });

  it('batch fields are reported with their index', () => {
    expect(errorsOf([{ payload: 1 }, { payload: 2, dedupKey: 'k', dedupWindowSeconds: -5 }])).toEqual([
      { field: '[1].dedupWindowSeconds', message: 'must be a number greater than 0 and at most 2592000 (30 days)' },
    ]);
  });
});

describe('expiry fields', () => {
  it('expiresAt and ttlSeconds become the AR-Expires-At header (UTC ISO)', () => {
    const zoned = parse({ payload: 1, expiresAt: '2026-12-02T11:30:00+01:00' });
    expect(zoned.ok && zoned.messages[0]!.headers[EXPIRES_AT_HEADER]).toBe('2026-12-02T10:30:00.000Z');
    const utc = parse({ payload: 1, expiresAt: '2026-12-02T10:00:00.5Z' });
    expect(utc.ok && utc.messages[0]!.headers[EXPIRES_AT_HEADER]).toBe('2026-12-02T10:00:00.500Z');
    const ttl = parse({ payload: 1, ttlSeconds: 90, delaySeconds: 30 });
    expect(ttl.ok && ttl.messages[0]!.headers[EXPIRES_AT_HEADER]).toBe('2026-12-02T10:01:30.000Z');
  });

  it('refuses an expiry in the past, at or before the due time, both forms at once, and bad values', () => {
    expect(errorsOf({ payload: 1, expiresAt: '2026-12-02T09:59:59Z' })).toEqual([{ field: 'expiresAt', message: 'is in the past: the job could never run' }]);
    expect(errorsOf({ payload: 1, expiresAt: '2026-12-02T11:00:00+01:00' }).map((e) => e.field)).toEqual(['expiresAt']); // exactly now
    expect(errorsOf({ payload: 1, expiresAt: '2026-12-02T10:00:10Z', delaySeconds: 10 })).toEqual([
      { field: 'expiresAt', message: 'falls before the job is due (delaySeconds): it could never run' },
    ]);
    expect(errorsOf({ payload: 1, ttlSeconds: 5, delaySeconds: 5 }).map((e) => e.field)).toEqual(['ttlSeconds']);
    expect(errorsOf({ payload: 1, ttlSeconds: 5, expiresAt: '2026-12-03T00:00:00Z' })).toEqual([{ field: 'ttlSeconds', message: 'give expiresAt or ttlSeconds, not both' }]);
    for (const ttl of [0, -1, '5', 3650 * 86400 + 1]) expect(errorsOf({ payload: 1, ttlSeconds: ttl }).map((e) => e.field), String(ttl)).toEqual(['ttlSeconds']);
    for (const at of ['tomorrow', '2026-12-03', '2026-12-03T10:00:00', 1764670000000]) {
      expect(errorsOf({ payload: 1, expiresAt: at }).map((e) => e.field), String(at)).toEqual(['expiresAt']);
    }
  });

  it('the header is caller-proof: AR-Expires-At cannot be set through headers', () => {
    expect(errorsOf({ payload: 1, headers: { 'AR-Expires-At': '2020-01-01T00:00:00Z' } }).map((e) => e.field)).toEqual(['headers.AR-Expires-At']);
  });

  it('a claimed job is expired at or after its instant; a missing or unreadable header never expires', () => {
    const h = { [EXPIRES_AT_HEADER]: '2026-12-02T10:00:00.000Z' };
    expect(expiresAt(h)?.toISOString()).toBe('2026-12-02T10:00:00.000Z');
    expect(isExpired(h, NOW - 1)).toBe(false);
    expect(isExpired(h, NOW)).toBe(true);
    expect(isExpired({}, NOW)).toBe(false);
    expect(isExpired({ [EXPIRES_AT_HEADER]: 'soon' }, NOW)).toBe(false);
  });
});

describe('dedup rounds', () => {
  it('the n-th use of a (queue, key) goes into round n; unkeyed messages stay in round 0, order kept', () => {
    const k = (queue: string, key: string) => message(queue, 1, { dedup: { key, windowMs: 1000, mode: 'drop' } });
    const batch = [k('q', 'a'), message('q'), k('q', 'a'), k('p', 'a'), k('q', 'b'), k('q', 'a')];
    expect(dedupRounds(batch).map((round) => round.map((r) => r.index))).toEqual([[0, 1, 3, 4], [2], [5]]);
  });
});
