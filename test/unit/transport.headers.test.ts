import { describe, expect, it } from 'vitest';
import { deadLetterHeaders, getHeader, parseHeadersLenient } from '../../shared/transport/headers';

describe('header materialization (lenient)', () => {
  it('keeps strings, renders other values as JSON text and skips nulls', () => {
    expect(parseHeadersLenient('{"a":"x","n":1,"b":true,"o":{"k":1},"z":null}')).toEqual({ a: 'x', n: '1', b: 'true', o: '{"k":1}' });
  });
  it('degrades garbage, arrays and scalars to no headers instead of throwing', () => {
    for (const bad of ['', 'not json', '[1,2]', '"s"', '42', null, undefined]) expect(parseHeadersLenient(bad)).toEqual({});
  });
  it('keeps a headers object whose values are all strings as parsed, with an own __proto__ key a plain header', () => {
    const h = parseHeadersLenient('{"traceparent":"00-ab","__proto__":"x","k":""}');
    expect(Object.entries(h)).toEqual([['traceparent', '00-ab'], ['__proto__', 'x'], ['k', '']]);
    expect(Object.getPrototypeOf(h)).toBe(Object.prototype);
    const mixed = parseHeadersLenient('{"__proto__":"x","n":1}');
    expect(Object.entries(mixed)).toEqual([['__proto__', 'x'], ['n', '1']]);
    expect(Object.getPrototypeOf(mixed)).toBe(Object.prototype);
  });
  it('looks names up case-insensitively, exact match first', () => {
    const h = { 'AR-Correlation-Id': 'a', 'ar-correlation-id': 'b', Other: 'c' };
    expect(getHeader(h, 'AR-Correlation-Id')).toBe('a');
    expect(getHeader(h, 'OTHER')).toBe('c');
    expect(getHeader(h, 'missing')).toBeUndefined();
    expect(getHeader({ traceparent: 'x' }, 'AR-Correlation-Id')).toBeUndefined();
    expect(getHeader({ 'x-a': '1', 'X-B': '2' }, 'x-b')).toBe('2');
  });
});

describe('dead-letter headers', () => {
  it('adds reason (CR/LF → space) and source queue, replacing any earlier ones', () => {
    const h = deadLetterHeaders({ keep: '1', 'ar-deadletter-reason': 'old' }, 'a\r\nb\nc', 'worker');
    expect(h).toEqual({ keep: '1', 'AR-DeadLetter-Reason': 'a  b c', 'AR-DeadLetter-Source-Queue': 'worker' });
  });
});
