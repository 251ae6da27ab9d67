import { describe, expect, it } from 'vitest';
import { RawJson } from '../../shared/json/raw-json';
import { isPublishPayloadPath, parsePublishBody } from '../../shared/transport/publish-request';

const MAX = 1000;

describe('publish request validation', () => {
  it('turns one message into a row with a fresh id, correlation header and delay', () => {
    const r = parsePublishBody({ payload: { n: 1 }, correlationId: 'c-1', headers: { a: 'b' }, delaySeconds: 1.5 }, 'worker', MAX);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.batch).toBe(false);
    expect(r.messages[0]).toMatchObject({ queue: 'worker', payloadJson: '{"n":1}', delayMs: 1500, headers: { a: 'b', 'AR-Correlation-Id': 'c-1' } });
    expect(r.messages[0]!.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('priority: an integer from -32768 to 32767 (the column is a smallint), default 0 (absent on the row)', () => {
    const ok = (priority: unknown) => parsePublishBody({ payload: 1, priority }, 'w', MAX);
    for (const p of [-32768, -1, 1, 32767]) expect(ok(p)).toMatchObject({ ok: true, messages: [{ priority: p }] });
    const zero = ok(0);
    expect(zero.ok && zero.messages[0]!.priority).toBeUndefined();
    const none = parsePublishBody({ payload: 1 }, 'w', MAX);
    expect(none.ok && 'priority' in none.messages[0]!).toBe(false);
    for (const bad of [32768, -32769, 1.5, '3', null, true, Number.NaN, [1]]) {
      expect(ok(bad), String(bad)).toMatchObject({
        ok: false,
        status: 400,
        errors: [{ field: 'priority', message: 'must be an integer from -32768 to 32767 (higher is claimed first)' }],
      });
    }
    const batch = parsePublishBody([{ payload: 1, priority: 3 }, { payload: 2, priority: 99999 }], 'w', MAX);
    expect(batch).toMatchObject({ ok: false, errors: [{ field: '[1].priority' }] });
    // a topic publish takes it too (each copy is a job of its subscription's queue)
    expect(parsePublishBody({ payload: 1, priority: 2 }, 't', MAX, undefined, { dedup: false })).toMatchObject({ ok: true, messages: [{ priority: 2 }] });
  });

  it('orderingKey: 1–200 characters without control characters, kept exactly; a 400 names the field (of the batch item)', () => {
    const r = parsePublishBody([{ payload: 1, orderingKey: ' Order 7 ' }, { payload: 2 }], 'worker', MAX);
    expect(r.ok && r.messages.map((m) => m.orderingKey)).toEqual([' Order 7 ', undefined]);
    expect(r.ok && 'orderingKey' in r.messages[1]!).toBe(false);
    for (const [bad, message] of [
      ['', 'must be a string of 1 to 200 characters'],
      ['k'.repeat(201), 'must be a string of 1 to 200 characters'],
      [7, 'must be a string of 1 to 200 characters'],
      ['a\nb', 'must not contain control characters or lone surrogates'],
      ['\ud800', 'must not contain control characters or lone surrogates'],
    ] as const) {
      const refused = parsePublishBody([{ payload: 1 }, { payload: 2, orderingKey: bad }], 'worker', MAX);
      expect(refused).toMatchObject({ ok: false, status: 400, errors: [{ field: '[1].orderingKey', message }] });
    }
    expect(parsePublishBody({ payload: 1, orderingKey: 'k'.repeat(200) }, 'worker', MAX).ok).toBe(true);
  });

  it('a topic publish refuses orderingKey (ordering keys belong to a queue publish)', () => {
    const r = parsePublishBody({ payload: 1, orderingKey: 'a' }, 'news', MAX, undefined, { dedup: false });
    expect(r).toMatchObject({ ok: false, status: 400, errors: [{ field: 'orderingKey', message: 'is not supported here: ordering keys belong to a queue publish' }] });
  });

  it('keeps the caller id (lower-cased) so a retried publish is idempotent', () => {
    const r = parsePublishBody({ payload: 1, id: 'AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE' }, 'worker', MAX);
    expect(r.ok && r.messages[0]!.id).toBe('aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee');
  });

  it('accepts null as a payload but not a missing one', () => {
    expect(parsePublishBody({ payload: null }, 'w', MAX).ok).toBe(true);
    expect(parsePublishBody({}, 'w', MAX)).toMatchObject({ ok: false, status: 400, errors: [{ field: 'payload', message: 'is required' }] });
  });

  it('reports every bad field with its path, in batches too', () => {
    const r = parsePublishBody(
      [
        { payload: 1, id: 'nope', delaySeconds: -1, headers: { x: 1, 'AR-DeadLetter-Reason': 'forged' }, extra: true },
        { payload: 2, correlationId: ' padded' },
        'not an object',
      ],
      'w',
      MAX,
    );
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.status).toBe(400);
    expect(r.errors.map((e) => e.field).sort()).toEqual(
      ['[0].id', '[0].delaySeconds', '[0].headers.x', '[0].headers.AR-DeadLetter-Reason', '[0].extra', '[1].correlationId', '[2]'].sort(),
    );
  });

  it('rejects U+0000 in header names and values', () => {
    expect(parsePublishBody({ payload: 1, headers: { a: 'x\u0000y' } }, 'w', MAX)).toMatchObject({ ok: false, errors: [{ field: 'headers.a' }] });
  });

  it('rejects header names and values the stores could not read back, and reserves every AR-* name', () => {
    const bad: Record<string, string>[] = [
      { a: 'x\ud800' }, // lone surrogate: PostgreSQL's jsonb refuses it on every read of the row
      { '\udc00': 'x' },
      { a: 'line\r\nbreak' },
      { 'a\nb': 'x' },
      { a: 'bell\u0007' },
      { 'AR-Attempts': '3' },
      { 'ar-anything': 'x' },
    ];
    for (const headers of bad) {
      const r = parsePublishBody({ payload: 1, headers }, 'w', MAX);
      expect(r, JSON.stringify(headers)).toMatchObject({ ok: false, status: 400 });
    }
    const proto = JSON.parse('{"payload":1,"headers":{"__proto__":"keep-me"}}') as unknown;
    expect(parsePublishBody(proto, 'w', MAX)).toMatchObject({ ok: false, errors: [{ field: 'headers.__proto__', message: 'is not a usable header name' }] });
    const ok = parsePublishBody({ payload: 1, headers: { a: 'tab\there', emoji: '😀', 'x-ar': 'fine' } }, 'w', MAX);
    expect(ok.ok && ok.messages[0]!.headers).toEqual({ a: 'tab\there', emoji: '😀', 'x-ar': 'fine' });
  });

  it('answers 413 when the headers are over 16 KiB as JSON', () => {
    expect(parsePublishBody({ payload: 1, headers: { h: 'v'.repeat(17_000) } }, 'w', MAX)).toMatchObject({ ok: false, status: 413, errors: [{ field: 'headers' }] });
    expect(parsePublishBody({ payload: 1, headers: { h: 'v'.repeat(16_000) } }, 'w', MAX).ok).toBe(true);
  });

  it('rejects empty and oversized batches and repeated ids', () => {
    expect(parsePublishBody([], 'w', MAX)).toMatchObject({ ok: false, status: 400 });
    expect(parsePublishBody(Array.from({ length: 101 }, () => ({ payload: 1 })), 'w', MAX)).toMatchObject({ ok: false, status: 400 });
    const id = '11111111-2222-4333-8444-555555555555';
    expect(parsePublishBody([{ payload: 1, id }, { payload: 2, id }], 'w', MAX)).toMatchObject({ ok: false, errors: [{ field: '[1].id' }] });
  });

  it('answers 413 when a payload is over the byte limit (UTF-8 bytes, not characters)', () => {
    const r = parsePublishBody({ payload: 'é'.repeat(600) }, 'w', MAX);
    expect(r).toMatchObject({ ok: false, status: 413 });
    expect(parsePublishBody({ payload: 'e'.repeat(600) }, 'w', MAX).ok).toBe(true);
  });
  it('stores a RawJson payload as its text (no re-serialisation), measuring its limit on that text', () => {
    const text = '{"a":9007199254740993,"b":1e999,"c":123456789012345678901234567890,"d":0.10000000000000000000001}';
    const r = parsePublishBody([{ payload: new RawJson(text) }, { payload: { n: 1 } }], 'w', MAX);
    expect(r.ok && r.messages.map((m) => m.payloadJson)).toEqual([text, '{"n":1}']);
    expect(parsePublishBody({ payload: new RawJson(`"${'é'.repeat(600)}"`) }, 'w', MAX)).toMatchObject({ ok: false, status: 413 });
  });
  it('names the payload paths a body reader should keep raw (a message, or the items of a batch)', () => {
    expect([['payload'], [0, 'payload'], [99, 'payload']].every((p) => isPublishPayloadPath(p))).toBe(true);
    expect([[], ['0', 'payload'], ['payload', 'x'], [0, 'payload', 1], ['headers']].some((p) => isPublishPayloadPath(p))).toBe(false);
  });
});
