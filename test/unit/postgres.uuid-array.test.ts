import { describe, expect, it } from 'vitest';
import { settlementParams, uuidArray } from '../../shared/stores/postgres/uuid-array';

describe('uuid array parameters of settlement statements', () => {
  const a = '0190f1e2-3c4d-7e5f-8a9b-0c1d2e3f4a5b';
  const b = 'A190F1E2-3C4D-7E5F-8A9B-0C1D2E3F4A5B';

  it('joins uuids into one array literal, without quotes', () => {
    expect(uuidArray([a, b])).toBe(`{${a},${b}}`);
    expect(settlementParams([{ id: a, lockId: b }, { id: b, lockId: b }])).toEqual([`{${a},${b}}`, `{${b},${b}}`]);
  });

  it('leaves a list with anything but uuid characters (or an empty element) to the driver, which quotes each element', () => {
    for (const odd of ['x"y', 'a,b', '{', '', 'NULL ', a.slice(1), `${a},${b}`, `${a.slice(0, 35)},`]) expect(uuidArray([a, odd])).toEqual([a, odd]);
    expect(uuidArray([])).toEqual([]);
  });
});
