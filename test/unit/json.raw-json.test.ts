// RawJson: a payload kept as the caller's text, spliced unchanged into every JSON document that carries it.
import { describe, expect, it } from 'vitest';
import { RawJson, payloadText, rawJsonAt, stringifyJson } from '../../shared/json/raw-json';

const PAYLOAD = '{"a":9007199254740993,"b":1e999,"c":123456789012345678901234567890,"d":0.10000000000000000000001}';

describe('RawJson', () => {
  it('is written as its own text, where JSON.stringify of the parsed value would change the numbers', () => {
    expect(JSON.stringify(JSON.parse(PAYLOAD))).not.toBe(PAYLOAD); // the loss this prevents
    expect(stringifyJson({ id: 'x', payload: new RawJson(PAYLOAD), n: 1 })).toBe(`{"id":"x","payload":${PAYLOAD},"n":1}`);
    expect(stringifyJson([new RawJson('1e999'), { deep: { p: new RawJson('[0.10000000000000000000001]') } }])).toBe('[1e999,{"deep":{"p":[0.10000000000000000000001]}}]');
    expect(stringifyJson(new RawJson(PAYLOAD))).toBe(PAYLOAD);
  });

  it('keeps a string that merely looks like a placeholder as a string', () => {
    const text = stringifyJson({ s: 'rawjson:00000000-0000-0000-0000-000000000000:0', p: new RawJson('2') });
    expect(JSON.parse(text)).toEqual({ s: 'rawjson:00000000-0000-0000-0000-000000000000:0', p: 2 });
  });

  it('splices text holding $-patterns and quotes literally', () => {
    expect(stringifyJson({ p: new RawJson('"$& $1 $$ \\" x"') })).toBe('{"p":"$& $1 $$ \\" x"}');
  });

  it('falls back to the parsed value for serializers that do not know it (JSON.stringify, the Functions library)', () => {
    expect(JSON.stringify({ p: new RawJson('{"n":1}') })).toBe('{"p":{"n":1}}');
    expect(new RawJson('[1,2]').value).toEqual([1, 2]);
  });

  it('parse validates and trims; invalid JSON throws', () => {
    expect(RawJson.parse(' \n 1e999 \t').text).toBe('1e999');
    expect(() => RawJson.parse('{"a":')).toThrow(SyntaxError);
    expect(() => RawJson.parse('')).toThrow(SyntaxError);
  });

  it('payloadText: a RawJson as it is, other values serialised, undefined as null', () => {
    expect(payloadText(new RawJson(PAYLOAD))).toBe(PAYLOAD);
    expect(payloadText({ n: 1 })).toBe('{"n":1}');
    expect(payloadText(undefined)).toBe('null');
  });

  it('rawJsonAt: the source text of a member (the last when repeated); undefined when absent or not JSON', () => {
    const job = `{"callbackUrl":"u","response":{"correlationId":"c","payload":${PAYLOAD},"final":true}}`;
    expect(rawJsonAt(job, ['response'])?.text).toBe(`{"correlationId":"c","payload":${PAYLOAD},"final":true}`);
    expect(rawJsonAt(job, ['response', 'payload'])?.text).toBe(PAYLOAD);
    expect(rawJsonAt('{"a":1,"a":2}', ['a'])?.text).toBe('2');
    expect(rawJsonAt('{"a":1}', ['b'])).toBeUndefined();
    expect(rawJsonAt('{"a":', ['a'])).toBeUndefined();
  });
});

describe('stringifyJson placeholders', () => {
  it('a placeholder that escaped into a string is never filled with another call\'s text', () => {
    // a toJSON that serialises a RawJson with plain JSON.stringify leaks the placeholder as text
    const leakedJson = stringifyJson({ toJSON: () => JSON.stringify(new RawJson('7')) });
    const leaked = JSON.parse(JSON.parse(leakedJson) as string) as string;
    expect(leaked).toMatch(/^rawjson:/);
    // fed back as a plain string beside a RawJson of a later call, it stays the string it is
    expect(stringifyJson([leaked, new RawJson('2')])).toBe(`[${JSON.stringify(leaked)},2]`);
  });
});
