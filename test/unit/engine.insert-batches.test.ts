import { describe, expect, it } from 'vitest';
import { INSERT_BATCH, INSERT_BATCH_BYTES, insertBatches, topicInsertBatches } from '../../shared/engine/create-engine';

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

  it('topic publishes: the caps count copies (messages × subscriptions), so 60 subscriptions never write 6,000 rows at once (M3)', () => {
    const sqlServer = topicInsertBatches(rows(100), 60, 'sqlserver');
    expect(sqlServer.map((b) => b.length)).toEqual(Array.from({ length: 100 }, () => 1)); // 60 copies per statement
    expect(topicInsertBatches(rows(100), 4, 'sqlserver').map((b) => b.length)).toEqual([25, 25, 25, 25]);
    expect(topicInsertBatches(rows(250), 1, 'sqlserver').map((b) => b.length)).toEqual([100, 100, 50]);
    expect(topicInsertBatches(rows(2_000), 2, 'postgres').map((b) => b.length)).toEqual([500, 500, 500, 500]);
    expect(topicInsertBatches(rows(3), 0, 'sqlserver').map((b) => b.length)).toEqual([3]); // no subscription: one statement
    // bytes too: 8 subscriptions of ~3 MB payloads → 16 MiB / 8 = 2 MiB of payload per statement, one message each
    expect(topicInsertBatches(rows(4, 1_000_000), 8, 'sqlserver').map((b) => b.length)).toEqual([1, 1, 1, 1]);
    for (const batch of topicInsertBatches(rows(1_000), 7, 'sqlserver')) expect(batch.length * 7).toBeLessThanOrEqual(INSERT_BATCH.sqlserver);
  });
});
