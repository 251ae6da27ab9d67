import { createHash } from 'node:crypto';

/**
 * A UUID derived from a name (SHA-1, shaped like a version-5 UUID): the same inputs always give the same id,
 * so a repeated step (a redelivered job, a second recovery claim) inserts nothing new.
 */
export function derivedUuid(name: string): string {
  const h = createHash('sha1').update(name, 'utf8').digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}
