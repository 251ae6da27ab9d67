import { describe, expect, it } from 'vitest';
import { INSERT_BATCH, INSERT_BATCH_BYTES, insertBatches } from '../../shared/engine/create-engine';

const rows = (n: number, chars = 10) => Array.from({ length: n }, (_, i) => ({ i, payloadJson: 'x'.repeat(chars) }));

describe('engine.publishBatch insert statements', () => {
  it('split by count: 1,000 rows per statement on PostgreSQL, 100 on SQL Server (lock escalation)', () => {
    expect(insertBatches(rows(2_500), INSERT_BATCH.postgres, INSERT_BATCH_BYTES).map((b) => b.length)).toEqual([1000, 1000, 500]);
    expect(insertBatches(rows(250), INSERT_BATCH.sqlserver, INSERT_BATCH_BYTES).map((b) => b.length)).toEqual([100, 100, 50]);
  });

  it('split by payload size too, keeping order; a single row larger than the cap still goes alone', () => {
    const big = rows(10, 1_000_000); // ~3 MB counted per row
    const batches = insertBatches(big, 1000, INSERT_BATCH_BYTES);
    expect(batches.map((b) => b.length)).toEqual([5, 5]);
    expect(batches.flat().map((r) => r.i)).toEqual(big.map((r) => r.i));
    expect(insertBatches(rows(2, 10_000_000), 1000, INSERT_BATCH_BYTES).map((b) => b.length)).toEqual([1, 1]);
    expect(insertBatches([], 1000, INSERT_BATCH_BYTES)).toEqual([]);
  });
});
