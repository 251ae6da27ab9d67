// Message ids generated when the caller gives none. Time-ordered ids keep the primary-key index appending at
// its right edge (index locality, fewer page splits) instead of inserting at random pages; the layout that is
// "time-ordered" depends on how the database compares uuids:
//
// - PostgreSQL (and PGlite) compares uuid bytes left to right, as the text reads: UUIDv7 (RFC 9562 §5.7),
//   a 48-bit big-endian Unix-ms timestamp first, then version 7, 12 bits of counter (rand_a), the variant and
//   62 random bits.
// - SQL Server compares uniqueidentifier values by byte groups, most significant first: bytes 10–15 (the last
//   text group), then 8–9, then 6–7, 4–5, 0–3 (SqlGuid order; NEWSEQUENTIALID varies its bytes to fit it).
//   A UUIDv7 would sort there by its random tail, so for SQL Server the timestamp goes into the last text
//   group (bytes 10–15, big-endian), a 14-bit counter into bytes 8–9 (under the variant bits), version 8
//   (RFC 9562's custom layout) into byte 6, random bits elsewhere. The last two text groups are stored in
//   text order (only the first three are little-endian in the .NET layout), so the driver's byte swapping
//   never touches the sort key.
//
// Both generators are monotonic within one generator: ids made in the same millisecond (or after the clock
// stepped back) count up; when the counter runs out the timestamp moves on by one millisecond.
// `random` mode returns plain UUIDv4 (crypto.randomUUID).

import { randomBytes, randomUUID } from 'node:crypto';

export type IdGenerationMode = 'sequential' | 'random';
export type IdLayout = 'uuidv7' | 'sqlserver';

export interface IdGeneratorDeps {
  /** epoch ms */
  now?: () => number;
  /** n random bytes */
  random?: (n: number) => Buffer;
}

const MAX_TIMESTAMP = 2 ** 48 - 1;

/** Random bytes from a 4 KiB pool refilled as it runs out: one randomBytes call per 256 ids, not per id (~20x faster). */
function pooledRandom(): (n: number) => Buffer {
  let pool = Buffer.alloc(0);
  let at = 0;
  return (n) => {
    if (at + n > pool.length) {
      pool = randomBytes(4096);
      at = 0;
    }
    at += n;
    return pool.subarray(at - n, at); // read only: the generator copies it into its own bytes
  };
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

function toUuidText(b: Uint8Array): string {
  const h = (i: number) => HEX[b[i]!]!;
  return (
    h(0) + h(1) + h(2) + h(3) + '-' + h(4) + h(5) + '-' + h(6) + h(7) + '-' + h(8) + h(9) + '-' +
    h(10) + h(11) + h(12) + h(13) + h(14) + h(15)
  );
}

function writeTimestamp(b: Uint8Array, at: number, ms: number): void {
  let v = ms;
  for (let i = 5; i >= 0; i--) {
    b[at + i] = v % 256;
    v = Math.floor(v / 256);
  }
}

/** A time-ordered generator for one layout: `counterBits` of counter, seeded in its lower half each new ms. */
function sequentialGenerator(layout: IdLayout, deps: IdGeneratorDeps): () => string {
  const now = deps.now ?? Date.now;
  const random = deps.random ?? pooledRandom();
  const counterBits = layout === 'uuidv7' ? 12 : 14;
  const counterMax = 2 ** counterBits - 1;
  let lastMs = -1;
  let counter = 0;
  const seed = (r: Buffer) => ((r[0]! << 8) | r[1]!) & (counterMax >> 1);
  const b = new Uint8Array(16);
  return () => {
    const r = random(16);
    const clock = Math.min(Math.max(0, Math.floor(now())), MAX_TIMESTAMP);
    if (clock > lastMs) {
      lastMs = clock;
      counter = seed(r);
    } else if (counter < counterMax) {
      counter++;
    } else {
      lastMs = Math.min(lastMs + 1, MAX_TIMESTAMP);
      counter = seed(r);
    }
    b.set(r.subarray(0, 16));
    if (layout === 'uuidv7') {
      writeTimestamp(b, 0, lastMs);
      b[6] = 0x70 | (counter >> 8);
      b[7] = counter & 0xff;
      b[8] = 0x80 | (b[8]! & 0x3f);
    } else {
      writeTimestamp(b, 10, lastMs);
      b[8] = 0x80 | (counter >> 8);
      b[9] = counter & 0xff;
      b[6] = 0x80 | (b[6]! & 0x0f);
    }
    return toUuidText(b);
  };
}

/** The id generator for a mode and the store's uuid ordering; lower-case text like the caller's ids. */
export function idGenerator(mode: IdGenerationMode, layout: IdLayout, deps: IdGeneratorDeps = {}): () => string {
  if (mode === 'random') return () => randomUUID();
  return sequentialGenerator(layout, deps);
}

/** The layout whose order the store's uuid comparison follows. */
export const idLayoutFor = (store: 'sqlserver' | 'postgres' | 'pglite'): IdLayout => (store === 'sqlserver' ? 'sqlserver' : 'uuidv7');

/** The Unix-ms timestamp a sequential id carries (for tests and diagnostics). */
export function idTimestamp(id: string, layout: IdLayout): number {
  const hex = id.replace(/-/g, '');
  return parseInt(layout === 'uuidv7' ? hex.slice(0, 12) : hex.slice(20, 32), 16);
}

/** ID_GENERATION: sequential (default) or random; anything else is reported with the other bad settings. */
export function idGeneration(raw: string | undefined, problems: string[]): IdGenerationMode {
  const value = (raw ?? 'sequential').toLowerCase();
  if (value === 'sequential' || value === 'random') return value;
  problems.push(`ID_GENERATION='${raw}' must be sequential or random`);
  return 'sequential';
}
