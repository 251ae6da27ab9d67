import { describe, expect, it } from 'vitest';
import { extractCorrelationId } from '../../shared/channel/correlation-extractor';
import { DEFAULT_CORRELATION_ID_JSON_PATHS as PATHS } from '../../shared/channel/correlation-extractor';
import { RawJson } from '../../shared/json/raw-json';

const x = (payload: unknown, headers: Record<string, string> = {}) => extractCorrelationId(headers, payload, PATHS);

describe('response ingress correlation id', () => {
  it('takes the AR-Correlation-Id header first (case-insensitive name), unless blank', () => {
    expect(x({ CorrelationId: 'body' }, { 'ar-correlation-id': 'hdr' })).toBe('hdr');
    expect(x({ CorrelationId: 'body' }, { 'AR-Correlation-Id': '  ' })).toBe('body');
  });

  it('resolves every default path form', () => {
    expect(x({ CorrelationId: 'a' })).toBe('a');
    expect(x({ CustomParameters: 'b' })).toBe('b');
    expect(x({ CustomParameters: { CorrelationId: 'c' } })).toBe('c');
    expect(x({ CustomParameters: '{"CorrelationId":"d"}' })).toBe('d');
    expect(x({ PubSubParams: { CustomParameters: 'e' } })).toBe('e');
    expect(x({ PubSubParams: { CustomParameters: { CorrelationId: 'f' } } })).toBe('f');
    expect(x({ PubSubParams: '{"CustomParameters":"{\\"CorrelationId\\":\\"g\\"}"}' })).toBe('g');
    expect(x({ DagJsonParameters: { CorrelationId: 'h' } })).toBe('h');
  });

  it('falls back to a case-insensitive property match, exact match first', () => {
    expect(x({ correlationid: 'lower' })).toBe('lower');
    expect(x({ correlationId: 'camel', CorrelationId: 'exact' })).toBe('exact');
  });

  it('renders numbers and booleans as their JSON text; skips blanks, objects and arrays', () => {
    expect(x({ CorrelationId: 42 })).toBe('42');
    expect(x({ CorrelationId: true })).toBe('true');
    expect(x({ CorrelationId: '   ', CustomParameters: 'next' })).toBe('next');
    expect(x({ CorrelationId: ['a'] })).toBeUndefined();
    expect(x({ CorrelationId: null })).toBeUndefined();
  });

  it('misses on non-objects, malformed nested JSON and absent paths', () => {
    expect(x('just a string')).toBeUndefined();
    expect(x(null)).toBeUndefined();
    expect(x([{ CorrelationId: 'in-array' }])).toBeUndefined();
    expect(x({ CustomParameters: '{not json' })).toBe('{not json'); // a string that fails to parse is a plain string
    expect(x({ Other: 1 })).toBeUndefined();
  });

  it('tries only the configured paths, in order', () => {
    expect(extractCorrelationId({}, { A: { B: 'ab' }, CorrelationId: 'c' }, ['A.B', 'CorrelationId'])).toBe('ab');
    expect(extractCorrelationId({}, { CorrelationId: 'c' }, [])).toBeUndefined();
  });

  it('takes a number as its source text when the payload comes as RawJson (no rounding), through nested JSON strings too', () => {
    const raw = (text: string) => extractCorrelationId({}, new RawJson(text), PATHS);
    expect(raw('{"CorrelationId":12345678901234567890}')).toBe('12345678901234567890');
    expect(x({ CorrelationId: 12345678901234567890 })).toBe('12345678901234567000'); // what a parsed value loses
    expect(raw('{"correlationid":1e999,"CorrelationId ":2}')).toBe('1e999');
    expect(raw('{"CorrelationId":1,"CorrelationId":9007199254740993}')).toBe('9007199254740993'); // the last, as JSON.parse
    expect(raw('{"PubSubParams":"{\\"CustomParameters\\":{\\"CorrelationId\\":0.10000000000000000000001}}"}')).toBe('0.10000000000000000000001');
    expect(raw('{"CustomParameters":{"CorrelationId":"s"}}')).toBe('s');
  });
});
