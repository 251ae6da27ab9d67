// The iterative JSON scanner: accepts what JSON.parse accepts, refuses depth beyond a limit without recursing,
// and reports the exact source text of the values asked for.
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, scanJson, type JsonPath } from '../../shared/json/scan';

const PAYLOAD = '{"a":9007199254740993,"b":1e999,"c":123456789012345678901234567890,"d":0.10000000000000000000001}';
const at = (...path: Array<string | number>) => (p: JsonPath) => p.length === path.length && p.every((s, i) => s === path[i]);
const spansOf = (text: string, capture: (p: JsonPath) => boolean) => {
  const r = scanJson(text, { capture });
  if (!r.ok) throw new Error(r.message);
  return r.spans.map((s) => text.slice(s.start, s.end));
};

describe('JSON scanner', () => {
  it('returns the exact source text of a captured value: big integers, exponents and long decimals unchanged', () => {
    expect(spansOf(`{"payload":${PAYLOAD}}`, at('payload'))).toEqual([PAYLOAD]);
    expect(spansOf(`{"n":-0.5e-7,"big":123456789012345678901234567890}`, at('big'))).toEqual(['123456789012345678901234567890']);
  });

  it('trims only the whitespace around a value, never inside it', () => {
    expect(spansOf(' \n{ "payload" :\t[ 1 , { "x" : 2 } ]\r\n } ', at('payload'))).toEqual(['[ 1 , { "x" : 2 } ]']);
    expect(spansOf('  "root"  ', (p) => p.length === 0)).toEqual(['"root"']);
  });

  it('gives each element of an array its index in the path', () => {
    const text = '[{"payload":1},{"id":"x","payload":{"k":[true,false,null]}},{"payload":"s"}]';
    const r = scanJson(text, { capture: (p) => p.length === 2 && p[1] === 'payload' });
    expect(r.ok && r.spans.map((s) => [s.path, text.slice(s.start, s.end)])).toEqual([
      [[0, 'payload'], '1'],
      [[1, 'payload'], '{"k":[true,false,null]}'],
      [[2, 'payload'], '"s"'],
    ]);
  });

  it('is not fooled by brackets, quotes and escapes inside strings, and decodes escaped member names', () => {
    const tricky = '{"s":"]}[{\\"payload\\":1}","t":"\\\\","u":"\\u005d\\/"}';
    expect(spansOf(`{"payload":${tricky},"after":1}`, at('payload'))).toEqual([tricky]);
    expect(spansOf('{"pay\\u006coad":[1]}', at('payload'))).toEqual(['[1]']);
    expect(spansOf('{"payload":{"payload":2}}', at('payload', 'payload'))).toEqual(['2']);
  });

  it('reports every occurrence of a repeated name in document order (JSON.parse keeps the last)', () => {
    expect(spansOf('{"payload":1,"payload":{"x":2}}', at('payload'))).toEqual(['1', '{"x":2}']);
  });

  it('accepts exactly what JSON.parse accepts', () => {
    const valid = ['0', '-0', '1.5E+3', '-12e-0', '""', '"\\b\\f\\n\\r\\t\\"\\\\\\/\\uABCD"', '"\ud800"', '[]', '{}', ' [ [ ] , { } ] ', 'true', 'null', '"😀 №"'];
    const invalid = ['', ' ', '01', '1.', '.5', '+1', '1e', '-', '[1,]', '{"a":1,}', '{a:1}', "'a'", '"a', '"\\x"', '"\\u12G4"', '"tab\there"', 'nul', 'truex', '[1] 2', '{"a" 1}', '[1 2]', '\ufeff1', 'NaN', '{"a":1}}', ']'];
    for (const text of valid) {
      expect(() => JSON.parse(text), text).not.toThrow();
      expect(scanJson(text).ok, text).toBe(true);
    }
    for (const text of invalid) {
      expect(() => JSON.parse(text), text).toThrow();
      const r = scanJson(text);
      expect(r.ok, text).toBe(false);
      expect(!r.ok && r.reason, text).toBe('syntax');
    }
  });

  it('names the position of a syntax error', () => {
    expect(scanJson('{"a":1,}')).toMatchObject({ ok: false, reason: 'syntax', offset: 7, message: expect.stringContaining('position 7') });
  });

  it('refuses nesting deeper than the limit (the body counts as level 1) and accepts it at the limit', () => {
    const nest = (n: number) => '['.repeat(n) + ']'.repeat(n);
    expect(scanJson(nest(MAX_JSON_DEPTH), { maxDepth: MAX_JSON_DEPTH }).ok).toBe(true);
    expect(scanJson(nest(MAX_JSON_DEPTH + 1), { maxDepth: MAX_JSON_DEPTH })).toMatchObject({ ok: false, reason: 'depth', offset: MAX_JSON_DEPTH });
    expect(scanJson(`{"a":${'{"b":'.repeat(MAX_JSON_DEPTH)}1${'}'.repeat(MAX_JSON_DEPTH)}}`, { maxDepth: MAX_JSON_DEPTH })).toMatchObject({ ok: false, reason: 'depth' });
  });

  it('scans nesting far beyond the call stack without recursing when no limit is set', () => {
    const n = 50_000; // JSON.stringify overflows the stack at about 5,000
    expect(scanJson('['.repeat(n) + ']'.repeat(n)).ok).toBe(true);
    expect(scanJson('['.repeat(n) + ']'.repeat(n - 1))).toMatchObject({ ok: false, reason: 'syntax' });
  });
});
