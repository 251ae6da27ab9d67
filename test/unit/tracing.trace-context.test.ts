// W3C traceparent / tracestate parsing, formatting and validation: bad input is ignored (undefined), never thrown.
import { describe, expect, it } from 'vitest';
import { childOf, formatTraceparent, newSpanId, parseTraceparent, traceHeaders, validTracestate } from '../../shared/tracing/trace-context';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const VALID = `00-${TRACE}-${SPAN}-01`;

describe('parseTraceparent', () => {
  it('reads a version-00 value', () => {
    expect(parseTraceparent(VALID)).toEqual({ traceId: TRACE, spanId: SPAN, flags: 1 });
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)?.flags).toBe(0);
    expect(parseTraceparent(` ${VALID} `)?.traceId).toBe(TRACE);
  });

  it('reads a later version as 00, extra fields included, but never ff', () => {
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-01`)).toEqual({ traceId: TRACE, spanId: SPAN, flags: 1 });
    expect(parseTraceparent(`cc-${TRACE}-${SPAN}-01-what-comes-next`)?.spanId).toBe(SPAN);
    expect(parseTraceparent(`ff-${TRACE}-${SPAN}-01`)).toBeUndefined();
  });

  it.each([
    ['undefined', undefined],
    ['a number', 42],
    ['empty', ''],
    ['garbage', 'not a traceparent at all, but long enough to pass the length check......'],
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['all-zero span id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['version 00 with an extra field', `${VALID}-extra`],
    ['non-hex flags', `00-${TRACE}-${SPAN}-0g`],
    ['over 512 characters', `01-${TRACE}-${SPAN}-01-${'x'.repeat(500)}`],
  ])('ignores %s', (_, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
  });

  it('keeps a valid tracestate and drops an invalid one (the traceparent still counts)', () => {
    expect(parseTraceparent(VALID, 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7')?.traceState).toBe('congo=t61rcWkgMzE,rojo=00f067aa0ba902b7');
    expect(parseTraceparent(VALID, 'not valid')).toEqual({ traceId: TRACE, spanId: SPAN, flags: 1 });
  });
});

describe('validTracestate', () => {
  it('accepts list members, tenant@system keys and empty members', () => {
    expect(validTracestate('a=1')).toBe('a=1');
    expect(validTracestate('tenant@sys=v,b=2,,c=3')).toBe('tenant@sys=v,b=2,,c=3');
  });
  it.each([
    ['a non-string', 1],
    ['empty', ''],
    ['a member without =', 'abc'],
    ['an upper-case key', 'Key=1'],
    ['a value with =', 'a=b=c'],
    ['a value with a control character', 'a=b\u0001'],
    ['more than 32 members', Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(',')],
    ['more than 512 characters', `a=${'x'.repeat(511)}`],
  ])('refuses %s', (_, value) => {
    expect(validTracestate(value)).toBeUndefined();
  });
});

describe('formatting and children', () => {
  it('formats version 00 with two-digit flags', () => {
    expect(formatTraceparent({ traceId: TRACE, spanId: SPAN, flags: 1 })).toBe(VALID);
    expect(formatTraceparent({ traceId: TRACE, spanId: SPAN, flags: 0 })).toBe(`00-${TRACE}-${SPAN}-00`);
    const parsed = parseTraceparent(VALID)!;
    expect(formatTraceparent(parsed)).toBe(VALID);
  });

  it('a child keeps trace, flags and state under a new, valid span id', () => {
    const parent = parseTraceparent(VALID, 'a=1')!;
    const child = childOf(parent);
    expect(child.traceId).toBe(TRACE);
    expect(child.flags).toBe(1);
    expect(child.traceState).toBe('a=1');
    expect(child.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(child.spanId).not.toBe(SPAN);
    expect(parseTraceparent(formatTraceparent(child))).toBeDefined();
    expect(newSpanId()).not.toBe(newSpanId());
  });

  it('traceHeaders sends tracestate only when there is one', () => {
    expect(traceHeaders({ traceId: TRACE, spanId: SPAN, flags: 1 })).toEqual({ traceparent: VALID });
    expect(traceHeaders({ traceId: TRACE, spanId: SPAN, flags: 1, traceState: 'a=1' })).toEqual({ traceparent: VALID, tracestate: 'a=1' });
  });
});
