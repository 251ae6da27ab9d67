// Header values that carry arbitrary text (correlation ids) over HTTP without loss. fetch refuses characters
// above U+00FF in a header ("Cannot convert argument to a ByteString") and sends U+0080–U+00FF as Latin-1
// bytes, which a UTF-8 receiver misreads. A value of printable ASCII goes out unchanged; any other value goes
// out RFC 8187-style as `UTF-8''` followed by its UTF-8 bytes percent-encoded (every byte outside RFC 8187's
// attr-char). A receiver decodes: value.startsWith("UTF-8''") ? decodeURIComponent(value.slice(7)) : value.
// An ASCII value that itself begins with the marker (in any case) is encoded too, so decoding is never ambiguous.

export const ENCODED_HEADER_PREFIX = "UTF-8''";

const PLAIN = /^[\x20-\x7e]*$/;
// RFC 8187 attr-char: ALPHA / DIGIT / "!" / "#" / "$" / "&" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~"
const ATTR_CHAR = /^[A-Za-z0-9!#$&+\-.^_`|~]$/;

export function encodeHeaderValue(value: string): string {
  if (PLAIN.test(value) && !value.toLowerCase().startsWith(ENCODED_HEADER_PREFIX.toLowerCase())) return value;
  let out = ENCODED_HEADER_PREFIX;
  for (const byte of Buffer.from(value, 'utf8')) {
    const ch = String.fromCharCode(byte);
    out += byte < 0x80 && ATTR_CHAR.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The receiver's side (what docs/handlers.md documents), used by the tests. */
export function decodeHeaderValue(value: string): string {
  return value.startsWith(ENCODED_HEADER_PREFIX) ? decodeURIComponent(value.slice(ENCODED_HEADER_PREFIX.length)) : value;
}
