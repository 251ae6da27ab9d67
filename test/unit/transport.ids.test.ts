// Generated ids sort in generation order under each database's own uuid comparison: PostgreSQL compares the
// 16 bytes as the text reads; SQL Server compares uniqueidentifier byte groups 10–15, 8–9, 6–7, 4–5, 0–3 of
// the stored (.NET, first three groups little-endian) layout. Both comparators are written out here from
// those rules, independently of the generator.
import { describe, expect, it } from 'vitest';
import { compareSqlServerGuids } from '../../shared/stores/sqlserver/store-common';
import { idGenerator, idLayoutFor, idTimestamp } from '../../shared/transport/ids';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The bytes SQL Server stores for a uniqueidentifier given as text (Guid.ToByteArray layout). */
function storedBytes(id: string): number[] {
  const hex = id.replace(/-/g, '');
  const text = Array.from({ length: 16 }, (_, i) => parseInt(hex.slice(i * 2, i * 2 + 2), 16));
  return [text[3]!, text[2]!, text[1]!, text[0]!, text[5]!, text[4]!, text[7]!, text[6]!, ...text.slice(8)];
}

/** SQL Server's uniqueidentifier ordering (SqlGuid.CompareTo): byte groups 10–15, 8–9, 6–7, 4–5, 0–3. */
function sqlServerCompare(a: string, b: string): number {
  const order = [10, 11, 12, 13, 14, 15, 8, 9, 6, 7, 4, 5, 0, 1, 2, 3];
  const x = storedBytes(a);
  const y = storedBytes(b);
  for (const i of order) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return 0;
}

/** PostgreSQL's uuid ordering: memcmp of the 16 bytes in text order. */
const postgresCompare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** A clock that advances by 0–2 ms per call and sometimes steps back 5 ms (an NTP correction). */
function jitteryClock(start: number) {
  let t = start;
  let calls = 0;
  return () => {
    calls++;
    if (calls % 997 === 0) t -= 5;
    else t += calls % 3;
    return t;
  };
}

describe('generated ids', () => {
  it('uuidv7: version 7, RFC variant, the millisecond timestamp first', () => {
    const at = Date.UTC(2026, 11, 1, 8, 30);
    const id = idGenerator('sequential', 'uuidv7', { now: () => at })();
    expect(id).toMatch(UUID);
    expect(id[14]).toBe('7');
    expect(['8', '9', 'a', 'b']).toContain(id[19]);
    expect(idTimestamp(id, 'uuidv7')).toBe(at);
  });

  it('sqlserver layout: version 8, RFC variant, the timestamp in the last group (bytes 10–15)', () => {
    const at = Date.UTC(2026, 11, 1, 8, 30);
    const id = idGenerator('sequential', 'sqlserver', { now: () => at })();
    expect(id).toMatch(UUID);
    expect(id[14]).toBe('8');
    expect(['8', '9', 'a', 'b']).toContain(id[19]);
    expect(idTimestamp(id, 'sqlserver')).toBe(at);
    expect(id.slice(24)).toBe(at.toString(16).padStart(12, '0'));
  });

  it.each([
    ['uuidv7', postgresCompare],
    ['sqlserver', sqlServerCompare],
  ] as const)('%s ids sort in generation order under that database’s comparison (same-ms bursts, a clock step back)', (layout, compare) => {
    const next = idGenerator('sequential', layout, { now: jitteryClock(1_764_576_000_000) });
    const ids = Array.from({ length: 6000 }, next);
    expect(new Set(ids).size).toBe(ids.length);
    const sorted = [...ids].sort(compare);
    expect(sorted).toEqual(ids);
  });

  it('the SQL Server comparator here agrees with the store’s (used to order publish batches)', () => {
    const next = idGenerator('random', 'sqlserver');
    const ids = Array.from({ length: 2000 }, next);
    expect([...ids].sort(sqlServerCompare)).toEqual([...ids].sort(compareSqlServerGuids));
  });

  it('uuidv7 ids do not sort in time order under SQL Server, nor the SQL Server layout under PostgreSQL (why two layouts)', () => {
    let t = 1_764_576_000_000;
    const v7 = idGenerator('sequential', 'uuidv7', { now: () => (t += 1) });
    const ids = Array.from({ length: 200 }, v7);
    expect([...ids].sort(sqlServerCompare)).not.toEqual(ids);
    t = 1_764_576_000_000;
    const ss = idGenerator('sequential', 'sqlserver', { now: () => (t += 1) });
    const ssIds = Array.from({ length: 200 }, ss);
    expect([...ssIds].sort(postgresCompare)).not.toEqual(ssIds);
  });

  it.each(['uuidv7', 'sqlserver'] as const)('%s: a full counter within one ms moves to the next ms and stays ordered', (layout) => {
    const at = 1_764_576_000_000;
    const next = idGenerator('sequential', layout, { now: () => at });
    const ids = Array.from({ length: layout === 'uuidv7' ? 5000 : 17_000 }, next); // more than the 12- / 14-bit counter holds
    const compare = layout === 'uuidv7' ? postgresCompare : sqlServerCompare;
    expect([...ids].sort(compare)).toEqual(ids);
    expect(idTimestamp(ids[0]!, layout)).toBe(at);
    expect(idTimestamp(ids.at(-1)!, layout)).toBeGreaterThan(at);
  });

  it('random mode gives v4 uuids that are not time-ordered', () => {
    const next = idGenerator('random', 'uuidv7');
    const ids = Array.from({ length: 200 }, next);
    for (const id of ids) expect(id[14]).toBe('4');
    expect([...ids].sort(postgresCompare)).not.toEqual(ids);
  });

  it('picks the layout from the store kind', () => {
    expect(idLayoutFor('sqlserver')).toBe('sqlserver');
    expect(idLayoutFor('postgres')).toBe('uuidv7');
    expect(idLayoutFor('pglite')).toBe('uuidv7');
  });
});
