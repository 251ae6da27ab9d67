// Retry-After (RFC 9110 §10.2.3): delay-seconds (a non-negative integer) or an HTTP-date. A value that is neither is
// no backoff request (the answer is a plain failure); a date in the past is a wait of 0. The wait is capped, so a
// target cannot park a queue for days by mistake.

/** The longest backoff a Retry-After can ask for: an hour. */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/** Milliseconds to wait, or undefined when the header is absent or unreadable. */
export function retryAfterMs(value: string | undefined, nowMs: number = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Math.min(MAX_RETRY_AFTER_MS, Number(v) * 1000);
  // an IMF-fixdate (and the obsolete forms Date.parse reads); a bare number with a sign or fraction is refused above
  if (!/[A-Za-z]/.test(v)) return undefined;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, at - nowMs));
}
