import { createHash } from 'node:crypto';

/**
 * The id of a schedule's job for one slot: deterministic, so every instance that evaluates the slot names the
 * same job and the insert-if-absent publish keeps one. UUID version 8 (RFC 9562, custom) from the first 16 bytes
 * of SHA-256 over the UTF-8 text `schedule\n{name}\n{slot as epoch ms}` (the same construction as the topic copy
 * ids, shared/transport/topic-names.ts).
 */
export function occurrenceId(name: string, slot: Date): string {
  const h = createHash('sha256').update(`schedule\n${name}\n${slot.getTime()}`, 'utf8').digest();
  h[6] = (h[6]! & 0x0f) | 0x80;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}
