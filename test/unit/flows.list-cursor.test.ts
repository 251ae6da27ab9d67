// The flow list cursor is opaque but comes back from callers (GET /api/flows?cursor=): only one a store could
// have returned may reach the SQL casts (a tampered one was a 500 there, found by the HTTP fuzz run).
import { describe, expect, it } from 'vitest';
import { decodeListCursor, encodeListCursor, isListCursor } from '../../shared/flows/store-rules';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64url');

describe('flow list cursor', () => {
  it("round-trips both dialects' exact instant text", () => {
    for (const updatedAt of ['2026-01-02T03:04:05.123456Z', '2026-01-02 03:04:05.1234567', '2026-12-31T23:59:59Z']) {
      const cursor = encodeListCursor({ updatedAt, flowId: 'order-42:child' });
      expect(isListCursor(cursor)).toBe(true);
      expect(decodeListCursor(cursor)).toEqual({ updatedAt, flowId: 'order-42:child' });
    }
  });

  it('refuses what no store returned: not base64 JSON, the wrong shape, a non-instant, an impossible date, a bad id', () => {
    const tampered = [
      'nope',
      '\u0000',
      b64('[]'),
      b64('[1,2]'),
      b64('{"a":1}'),
      b64('["2026-01-01T00:00:00Z"]'),
      b64('["x","y"]'),
      b64('["2026-13-45T99:00:00Z","y"]'),
      b64('["2026-02-30T00:00:00Z","y"]'),
      b64('["2026-01-01T24:00:00Z","y"]'),
      b64('["2026-01-01T00:00:00+02:00","y"]'),
      b64('["2026-01-01T00:00:00.12345678Z","y"]'),
      b64('["2026-01-01T00:00:00Z",""]'),
      b64(JSON.stringify(['2026-01-01T00:00:00Z', 'x'.repeat(401)])),
    ];
    for (const cursor of tampered) {
      expect(isListCursor(cursor), cursor).toBe(false);
      expect(() => decodeListCursor(cursor), cursor).toThrow(RangeError);
    }
  });
});
