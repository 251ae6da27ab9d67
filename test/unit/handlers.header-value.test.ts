// Header values carrying any correlation id: printable ASCII unchanged, anything else RFC 8187-style
// (UTF-8'' + percent-encoded UTF-8), so fetch can send it and a UTF-8 receiver decodes it exactly.
import { describe, expect, it } from 'vitest';
import { decodeHeaderValue, encodeHeaderValue } from '../../shared/handlers/header-value';

const IDS = ['№-Кириллица-漢字-😀-\u200f', 'café-ü-ÿ', '\u00a0x', 'a b+c%41', "UTF-8''looks-encoded", "utf-8''lower", 'order-1', '"quoted" (x) *'];

describe('header value encoding', () => {
  it('leaves printable ASCII ids unchanged', () => {
    for (const id of ['order-1', 'a b+c%41', '"quoted" (x) *', 'x'.repeat(400)]) expect(encodeHeaderValue(id)).toBe(id);
  });

  it('encodes non-ASCII as UTF-8 percent-escapes behind the marker, using only RFC 8187 attr-chars', () => {
    expect(encodeHeaderValue('№-Ж')).toBe("UTF-8''%E2%84%96-%D0%96");
    expect(encodeHeaderValue('é')).toBe("UTF-8''%C3%A9"); // U+0080–U+00FF: UTF-8, never Latin-1 bytes
    expect(encodeHeaderValue("UTF-8''x")).toBe("UTF-8''UTF-8%27%27x"); // an ASCII id starting with the marker
    for (const id of IDS) expect(encodeHeaderValue(id)).toMatch(/^[\x20-\x7e]*$/);
  });

  it('round-trips every id through the Headers class of fetch and the documented decoding', async () => {
    for (const id of IDS) {
      expect(decodeHeaderValue(encodeHeaderValue(id)), id).toBe(id);
      // fetch validates header values with Headers: it must accept the value and carry it unchanged
      const headers = new Headers({ 'x-asyncresponse-correlation-id': encodeHeaderValue(id) });
      expect(decodeHeaderValue(headers.get('x-asyncresponse-correlation-id')!), id).toBe(id);
    }
    expect(() => new Headers({ 'x-id': '№' })).toThrow(); // why the encoding exists
  });
});
