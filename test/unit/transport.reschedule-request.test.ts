import { describe, expect, it } from 'vitest';
import { parseRescheduleBody } from '../../shared/transport/reschedule-request';

describe('reschedule body', () => {
  it('takes a delay in seconds (ms on the database clock) or an instant with a zone', () => {
    expect(parseRescheduleBody({ delaySeconds: 1.5 })).toEqual({ ok: true, when: { delayMs: 1500 } });
    expect(parseRescheduleBody({ delaySeconds: 0 })).toEqual({ ok: true, when: { delayMs: 0 } });
    expect(parseRescheduleBody({ availableAt: '2026-12-24T18:00:00+01:00' })).toEqual({ ok: true, when: { availableAt: new Date('2026-12-24T17:00:00Z') } });
    expect(parseRescheduleBody({ availableAt: '2026-12-24T18:00Z' })).toMatchObject({ ok: true });
  });

  it('refuses both, neither, unknown fields, bad numbers and instants without a zone, naming the field', () => {
    const field = (v: unknown) => {
      const r = parseRescheduleBody(v);
      return r.ok ? 'ok' : r.errors.map((e) => e.field).join(',');
    };
    expect(field({ delaySeconds: 1, availableAt: '2026-12-24T18:00:00Z' })).toBe('');
    expect(field({})).toBe('');
    expect(field([])).toBe('');
    expect(field(null)).toBe('');
    expect(field({ delay: 5 })).toBe('delay');
    expect(field({ delaySeconds: -1 })).toBe('delaySeconds');
    expect(field({ delaySeconds: '5' })).toBe('delaySeconds');
    expect(field({ delaySeconds: 3650 * 86400 + 1 })).toBe('delaySeconds');
    expect(field({ availableAt: '2026-12-24 18:00' })).toBe('availableAt');
    expect(field({ availableAt: '2026-12-24T18:00:00' })).toBe('availableAt'); // no zone: no server's local time is guessed
    expect(field({ availableAt: '2026-13-45T18:00:00Z' })).toBe('availableAt');
    expect(field({ availableAt: 1766599200000 })).toBe('availableAt');
  });
});
