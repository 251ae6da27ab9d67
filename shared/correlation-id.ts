// Correlation-id rules shared by every entry point (spec §2.13): ≤ 400 UTF-16 units, no leading/trailing
// whitespace (= pads trailing spaces under every SQL Server collation), no control characters, well-formed
// UTF-16. Ids are compared ordinally (binary collation), so case matters.

export const MAX_CORRELATION_ID_LENGTH = 400;

/** Returns null for a usable id, else why it is not. */
export function correlationIdProblem(id: unknown): string | null {
  if (id === undefined || id === null) return 'is required';
  if (typeof id !== 'string') return 'must be a string';
  if (id.length === 0) return 'must not be empty';
  if (id.length > MAX_CORRELATION_ID_LENGTH) return `is ${id.length} UTF-16 units long; at most ${MAX_CORRELATION_ID_LENGTH} are allowed`;
  if (id.trim() !== id) return 'must not begin or end with whitespace';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(id)) return 'must not contain control characters';
  if (!isWellFormedUtf16(id)) return 'must be well-formed UTF-16 (no lone surrogates)';
  return null;
}

export function isWellFormedUtf16(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return false;
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) return false;
  }
  return true;
}
