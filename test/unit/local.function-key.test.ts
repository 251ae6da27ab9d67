// The function key check must not tell a caller the key's length: whatever is given, the host compares two
// digests of one fixed size in constant time (no early return on a length mismatch).
import { describe, expect, it, vi } from 'vitest';
import { keyMatches } from '../../local/function-key';

// vi.mock is hoisted above the import, so function-key.ts sees the recording timingSafeEqual
const compared = vi.hoisted(() => [] as Array<[number, number]>);
vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  return {
    ...real,
    timingSafeEqual: (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
      compared.push([a.byteLength, b.byteLength]);
      return real.timingSafeEqual(a, b);
    },
  };
});

describe('function key comparison', () => {
  it('accepts exactly the key', () => {
    expect(keyMatches('sekret-key', 'sekret-key')).toBe(true);
    for (const wrong of ['', 's', 'sekret-ke', 'sekret-keyy', 'SEKRET-KEY', 'x'.repeat(5000), null, undefined]) {
      expect(keyMatches(wrong, 'sekret-key'), String(wrong)).toBe(false);
    }
  });

  it('compares equal-sized digests in constant time for keys of any length', () => {
    compared.length = 0;
    const given = ['', 'a', 'sekret-ke', 'sekret-key', 'x'.repeat(5000)];
    for (const key of given) keyMatches(key, 'sekret-key');
    expect(compared).toEqual(given.map(() => [32, 32]));
  });
});
