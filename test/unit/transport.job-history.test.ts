// The pure parts of job lookup and history: the cursor round trip and what it refuses, the state a stored row reads
// as, which row answers a lookup, the engine's search checks, and the history prune sharing one budget.
import { describe, expect, it } from 'vitest';
import { decodeHistoryCursor, encodeHistoryCursor, jobRecord, pickJobRow, type StoredJobRow } from '../../shared/transport/history';
import { historyQuery, JobSearchError } from '../../shared/engine/job-search';
import { pruneHistory } from '../../shared/transport/history-prune';
import { silentLogger } from '../../shared/log';

const ID = '0190a000-0000-7000-8000-000000000001';
const row = (extra: Partial<StoredJobRow>): StoredJobRow => ({
  source: 'queue',
  id: ID,
  queue: 'work',
  attempts: 0,
  headers: {},
  createdAt: new Date('2026-12-01T00:00:00Z'),
  availableAt: new Date('2026-12-01T00:00:01Z'),
  completedAt: null,
  leased: false,
  delayed: false,
  deadLetterReason: null,
  ...extra,
});
const read = (r: StoredJobRow) => jobRecord(r, 'deadletter', 'AR-DeadLetter-Source-Queue', 'AR-Correlation-Id');

describe('job history model', () => {
  it('a cursor round-trips (100 ns precision kept); anything else is refused', () => {
    const c = { completedAt: '2026-12-02T01:02:03.1234567Z', id: ID };
    expect(decodeHistoryCursor(encodeHistoryCursor(c))).toEqual(c);
    for (const bad of ['', 'nope!', Buffer.from('[1,2]').toString('base64url'), Buffer.from('["2026-12-02", "x"]').toString('base64url'), 'a'.repeat(201)]) {
      expect(decodeHistoryCursor(bad), bad).toBeNull();
    }
  });

  it('a stored row reads as ready, delayed, leased, dead-lettered, expired or completed', () => {
    expect(read(row({})).state).toBe('ready');
    expect(read(row({ delayed: true })).state).toBe('delayed');
    expect(read(row({ leased: true, delayed: true })).state).toBe('leased');
    const dead = read(row({ queue: 'deadletter', attempts: 3, deadLetterReason: 'boom', headers: { 'AR-DeadLetter-Source-Queue': 'work', 'AR-Correlation-Id': 'c1' } }));
    expect(dead).toMatchObject({ state: 'dead-lettered', queue: 'work', attempts: 3, lastError: 'boom', availableAt: null, correlationId: 'c1' });
    expect(read(row({ queue: 'deadletter', deadLetterReason: 'expired' }))).toMatchObject({ state: 'expired', attempts: null, queue: 'deadletter' });
    const done = read(row({ source: 'history', attempts: 2, completedAt: new Date('2026-12-01T00:00:02Z') }));
    expect(done).toMatchObject({ state: 'completed', attempts: 2, lastError: null });
  });

  it('the live row answers a lookup before history; among history rows the newest completion', () => {
    const older = row({ source: 'history', completedAt: new Date('2026-12-01T00:00:02Z') });
    const newer = row({ source: 'history', completedAt: new Date('2026-12-01T00:00:09Z') });
    expect(pickJobRow([older, newer])).toBe(newer);
    const live = row({});
    expect(pickJobRow([older, live, newer])).toBe(live);
    expect(pickJobRow([])).toBeUndefined();
  });

  it('the engine search: queue or correlation id required, state, window, top and cursor checked together', () => {
    expect(historyQuery({ queue: 'work' })).toEqual({ queue: 'work', top: 50 });
    const cursor = encodeHistoryCursor({ completedAt: '2026-12-02T01:02:03.123456Z', id: ID });
    expect(historyQuery({ correlationId: 'c', cursor, top: 500 })).toEqual({ correlationId: 'c', after: { completedAt: '2026-12-02T01:02:03.123456Z', id: ID }, top: 500 });
    try {
      historyQuery({ state: 'ready' as never, top: 501, cursor: 'x!', since: new Date(2), until: new Date(1) });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(JobSearchError);
      expect((e as JobSearchError).errors.map((x) => x.field)).toEqual(['queue', 'state', 'until', 'top', 'cursor']);
    }
  });

  it('the history prune goes queue by queue on one budget and stops where it runs out', async () => {
    let clock = 0;
    const calls: string[] = [];
    const store = {
      pruneHistoryBatch: async (queue: string) => {
        calls.push(queue);
        clock += 600;
        return queue === 'a' ? 1000 : 10;
      },
    };
    const r = await pruneHistory(store, [['a', 1], ['off', 0], ['b', 1], ['c', 1]], silentLogger, 2000, () => clock);
    // a: full batches until the budget is spent (4 × 600 ms), so b and c wait for the next run
    expect(calls).toEqual(['a', 'a', 'a', 'a']);
    expect(r).toEqual({ deleted: 4000, batches: 4, cutShort: true });
    clock = 0;
    calls.length = 0;
    expect(await pruneHistory(store, [['b', 1], ['c', 1]], silentLogger, 2000, () => clock)).toEqual({ deleted: 20, batches: 2, cutShort: false });
  });
});
