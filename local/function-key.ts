import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (key: string): Buffer => createHash('sha256').update(key, 'utf8').digest();

/**
 * Compares SHA-256 digests in constant time: both sides are always 32 bytes, so neither the time taken nor an
 * early length check tells a caller how long the key is.
 */
export function keyMatches(given: string | null | undefined, expected: string): boolean {
  return timingSafeEqual(digest(given ?? ''), digest(expected)) && typeof given === 'string' && given !== '';
}
