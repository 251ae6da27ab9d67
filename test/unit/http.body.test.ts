// Reading JSON request bodies: media types, charset, size and parse errors.
import { describe, expect, it } from 'vitest';
import { readJsonBody } from '../../shared/http/body';
import { RawJson } from '../../shared/json/raw-json';
import { MAX_JSON_DEPTH } from '../../shared/json/scan';

const read = (type: string | null, body: string, length: string | null = null) => readJsonBody(type, length, async () => body);

describe('JSON request bodies', () => {
  it('takes JSON, +json, no type, and a UTF-8 charset', async () => {
    for (const type of [null, 'application/json', 'application/cloudevents+json', 'application/json; charset=utf-8', 'application/json;charset="UTF-8"']) {
      expect(await read(type, '{"a":1}'), String(type)).toEqual({ ok: true, value: { a: 1 } });
    }
  });
  it('answers 415 for another media type or another charset (the body is read as UTF-8)', async () => {
    for (const type of ['text/plain', 'application/json; charset=utf-16', 'application/json; charset=iso-8859-1']) {
      const r = await read(type, '{"a":1}');
      expect(r.ok, type).toBe(false);
      expect(!r.ok && r.answer.status, type).toBe(415);
    }
  });
  it('reads curl -d (form type) as JSON: accepted when it parses, the 400 naming the parse error when not (issue 27)', async () => {
    expect(await read('application/x-www-form-urlencoded', '{"a":1}')).toEqual({ ok: true, value: { a: 1 } });
    for (const body of ['a=1', '{"payload":{"n":1}', "{'payload':1}"]) {
      const r = await read('application/x-www-form-urlencoded', body, String(body.length));
      expect(!r.ok && r.answer.status, body).toBe(400);
      expect(!r.ok && r.answer.body, body).toMatch(/not valid JSON: .*curl -d/);
    }
  });
  it('answers 413 over the limit, 400 for empty or malformed JSON', async () => {
    const big = await read('application/json', '{}', String(5 * 1024 * 1024));
    expect(!big.ok && big.answer.status).toBe(413);
    for (const body of ['', '  ', '{"a":']) {
      const r = await read('application/json', body, String(Buffer.byteLength(body)));
      expect(!r.ok && r.answer.status, JSON.stringify(body)).toBe(400);
    }
  });
  it('answers 411 for an empty body without Content-Length (Azure drops chunked bodies), naming the fix', async () => {
    const r = await read('application/json', '', null);
    expect(!r.ok && r.answer.status).toBe(411);
    expect(!r.ok && r.answer.body).toMatch(/Content-Length/);
    expect(!r.ok && JSON.parse(r.answer.body!)).toMatchObject({ title: 'Length Required', detail: expect.stringMatching(/no body/) });
  });
  it('answers 400 naming the limit for a body nested deeper than MAX_JSON_DEPTH (4,100 levels: no stack overflow)', async () => {
    for (const depth of [MAX_JSON_DEPTH + 1, 4100]) {
      const body = `{"payload":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;
      const r = await read('application/json', body, String(body.length));
      expect(!r.ok && r.answer.status, String(depth)).toBe(400);
      expect(!r.ok && r.answer.body).toContain(`deeper than ${MAX_JSON_DEPTH} levels`);
    }
    const atLimit = `{"payload":${'['.repeat(MAX_JSON_DEPTH - 1)}${']'.repeat(MAX_JSON_DEPTH - 1)}}`;
    expect((await read('application/json', atLimit, String(atLimit.length))).ok).toBe(true);
  });
  it('hands the values rawAt selects over as RawJson: the text the caller sent, not re-serialised', async () => {
    const payload = '{"a":9007199254740993,"b":1e999}';
    const r = await readJsonBody('application/json', null, async () => `[{"payload": ${payload} , "id":"x"},{"payload":1,"payload":[2]}]`, undefined, (p) => p.length === 2 && p[1] === 'payload');
    expect(r).toEqual({ ok: true, value: [{ payload: new RawJson(payload), id: 'x' }, { payload: new RawJson('[2]') }] });
  });
});
