// How the SQL Server store binds parameters and maps rows, against a scripted pool whose schema is ready.

import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../shared/log';
import { transportNames } from '../../shared/sql/identifiers';
import { renewRequestTimeoutMs, SqlServerTransportStore } from '../../shared/stores/sqlserver/store';
import type { OutgoingMessage } from '../../shared/transport/types';
import {
  catalogRecordsets,
  FakePool,
  isCatalogQuery,
  isHistoryDdl,
  isPhase1,
  specCatalog,
  sqlError,
  type FakeCall,
  type Row,
} from './sqlserver.fakes';

const names = transportNames('dbo', 'jobs', 'sqlserver');
const ID1 = 'A1B2C3D4-0000-4000-8000-000000000001';
const ID2 = 'a1b2c3d4-0000-4000-8000-000000000002';
const LOCK = 'B0000000-0000-4000-8000-0000000000FF';

async function readyStore(respond: (call: FakeCall) => Row[][] | undefined) {
  const pool = new FakePool((call) => {
    if (isCatalogQuery(call)) return catalogRecordsets(specCatalog(names));
    if (isPhase1(call) || isHistoryDdl(call)) return [];
    return respond(call) ?? [];
  });
  const store = new SqlServerTransportStore(pool.asPool(), {
    schema: 'dbo',
    table: 'jobs',
    autoCreateSchema: true,
    logger: silentLogger,
  });
  await store.ensureSchema();
  pool.calls.length = 0;
  return { pool, store };
}

const at = (iso: string, nanosecondsDelta = 0) =>
  Object.defineProperty(new Date(iso), 'nanosecondsDelta', { value: nanosecondsDelta, enumerable: false });

const msg = (id: string, extra: Partial<OutgoingMessage> = {}): OutgoingMessage => ({
  id,
  queue: 'secret_queue_name',
  payloadJson: '{"n":1}',
  headers: { 'AR-Correlation-Id': 'c-1' },
  delayMs: 0,
  ...extra,
});

describe('SQL Server store: parameters and rows', () => {
  it('publish sends one JSON batch (first occurrence of an id wins) and maps inserted vs duplicate rows', async () => {
    const t1 = at('2030-01-01T00:00:00.000Z');
    const t2 = at('2029-12-31T00:00:00.000Z');
    const { pool, store } = await readyStore(() => [
      [{ id: ID1.toUpperCase(), available_at: t1 }],
      [
        { id: ID1.toUpperCase(), available_at: t1, queue: 'secret_queue_name' },
        { id: ID2.toUpperCase(), available_at: t2, queue: 'elsewhere' },
      ],
    ]);
    const outcomes = await store.publish([msg(ID1, { delayMs: 1500.2 }), msg(ID2, { priority: -7 }), msg(ID1.toLowerCase())]);
    expect(outcomes).toEqual([
      { id: ID1, inserted: true, availableAt: t1 },
      { id: ID2, inserted: false, availableAt: t2, existingQueue: 'elsewhere' },
      { id: ID1.toLowerCase(), inserted: false, availableAt: t1, existingQueue: 'secret_queue_name' },
    ]);
    expect(pool.calls).toHaveLength(1);
    const batch = JSON.parse(pool.calls[0]!.inputs.batch!.value as string) as Array<Record<string, unknown>>;
    expect(batch).toEqual([
      { id: ID1, queue: 'secret_queue_name', payload_json: '{"n":1}', headers_json: '{"AR-Correlation-Id":"c-1"}', delay_ms: 1501, priority: 0, ord: 0 },
      { id: ID2, queue: 'secret_queue_name', payload_json: '{"n":1}', headers_json: '{"AR-Correlation-Id":"c-1"}', delay_ms: 0, priority: -7, ord: 1 },
    ]);
  });

  it("publish sends the batch in SQL Server's key order (one lock order for concurrent batches), ord keeps the publish order", async () => {
    // SQL Server orders uniqueidentifiers by their last six bytes first: ...0002 sorts after ...0001 whatever the prefix
    const LATE = 'ffffffff-ffff-4fff-8fff-000000000001';
    const EARLY = '00000000-0000-4000-8000-000000000002';
    const { pool, store } = await readyStore(() => [[]]);
    await store.publish([msg(EARLY), msg(LATE)]);
    const batch = JSON.parse(pool.calls[0]!.inputs.batch!.value as string) as Array<{ id: string; ord: number }>;
    expect(batch.map((b) => [b.id, b.ord])).toEqual([
      [LATE, 1],
      [EARLY, 0],
    ]);
  });

  it('a duplicate whose row is already gone reports availableAt null', async () => {
    const { store } = await readyStore(() => [[], []]);
    expect(await store.publish([msg(ID2)])).toEqual([{ id: ID2, inserted: false, availableAt: null }]);
  });

  it('a duplicate-key race (2627/2601) re-runs the insert-if-absent instead of failing', async () => {
    let attempt = 0;
    const t = at('2030-01-01T00:00:00.000Z');
    const { pool, store } = await readyStore((call) => {
      if (!call.text.includes('OPENJSON(@batch)')) return undefined;
      attempt++;
      if (attempt === 1) throw sqlError(2627, 14, 'Violation of PRIMARY KEY constraint');
      if (attempt === 2) throw sqlError(2601, 14, 'Cannot insert duplicate key row');
      return [[], [{ id: ID1, available_at: t, queue: 'secret_queue_name' }]];
    });
    expect(await store.publish([msg(ID1)])).toEqual([{ id: ID1, inserted: false, availableAt: t, existingQueue: 'secret_queue_name' }]);
    expect(pool.calls).toHaveLength(3);
  });

  it('publish gives up on a permanent error and after repeated duplicate races', async () => {
    const { store } = await readyStore(() => {
      throw sqlError(8152, 16, 'String or binary data would be truncated');
    });
    await expect(store.publish([msg(ID1)])).rejects.toThrow(/truncated/);
    const racing = await readyStore(() => {
      throw sqlError(2627, 14, 'Violation of PRIMARY KEY constraint');
    });
    await expect(racing.store.publish([msg(ID1)])).rejects.toThrow(/PRIMARY KEY/);
    expect(racing.pool.calls).toHaveLength(3);
  });

  it('publish refuses a delay beyond 3650 days before touching the database', async () => {
    const { pool, store } = await readyStore(() => undefined);
    await expect(store.publish([msg(ID1, { delayMs: 3651 * 86_400_000 })])).rejects.toThrow(RangeError);
    expect(pool.calls).toHaveLength(0);
  });

  it('claim returns rows higher priority first (OUTPUT order is not guaranteed), then in availability order', async () => {
    const row = (id: string, priority: number, available: string) => ({
      id,
      queue: 'secret_queue_name',
      payload_json: '{}',
      headers_json: '{}',
      attempts: 1,
      lock_id: LOCK,
      created_at: at(available),
      available_at: at(available),
      priority,
    });
    const { store } = await readyStore(() => [
      [row('LOW', -1, '2030-01-01T00:00:00Z'), row('LATE_HIGH', 5, '2030-01-01T00:00:02Z'), row('ZERO', 0, '2030-01-01T00:00:00Z'), row('HIGH', 5, '2030-01-01T00:00:01Z')],
    ]);
    const claimed = await store.claim('secret_queue_name', 4, 30_000);
    expect(claimed.map((c) => [c.id, c.priority])).toEqual([
      ['high', 5],
      ['late_high', 5],
      ['zero', 0],
      ['low', -1],
    ]);
  });

  it('claim binds typed parameters, returns rows in availability order (to the 100 ns) with lower-case ids', async () => {
    const row = (id: string, available: Date, created: Date, headers: string | null) => ({
      id,
      queue: 'secret_queue_name',
      payload_json: '{}',
      headers_json: headers,
      attempts: 2,
      lock_id: LOCK,
      created_at: created,
      available_at: available,
    });
    const same = '2030-01-01T00:00:00.123Z';
    const { pool, store } = await readyStore(() => [
      [
        row('C', at(same, 0.0000005), at(same), '{"a":"1","n":2,"z":null}'),
        row('A', at(same, 0.0000001), at(same, 0.0000003), 'not json'),
        row('B', at(same, 0.0000001), at(same, 0.0000002), '[1]'),
        row('D', at('2029-01-01T00:00:00Z'), at('2031-01-01T00:00:00Z'), '{}'),
      ],
    ]);
    const claimed = await store.claim('secret_queue_name', 4, 30_000);
    expect(claimed.map((c) => c.id)).toEqual(['d', 'b', 'a', 'c']);
    expect(claimed.map((c) => c.priority)).toEqual([0, 0, 0, 0]); // a row without the column reads as 0
    expect(claimed[3]).toMatchObject({ lockId: LOCK.toLowerCase(), attempt: 2, queue: 'secret_queue_name', headers: { a: '1', n: '2' } });
    expect(claimed[1]!.headers).toEqual({});
    expect(claimed[2]!.headers).toEqual({});
    const call = pool.calls[0]!;
    expect(call.inputs.n!.value).toBe(4);
    expect(call.inputs.queue!.value).toBe('secret_queue_name');
    expect(call.inputs.lock_timeout_ms!.value).toBe(30_000);
    expect(await store.claim('secret_queue_name', 0, 30_000)).toEqual([]);
    expect(pool.calls).toHaveLength(1);
  });

  it('ack sends each (id, lock_id) once in one statement and returns the server-side count', async () => {
    const { pool, store } = await readyStore(() => [[{ affected: 2 }]]);
    const n = await store.ack([
      { id: ID1, lockId: LOCK },
      { id: ID1.toLowerCase(), lockId: LOCK.toLowerCase() },
      { id: ID2, lockId: LOCK },
    ]);
    expect(n).toBe(2);
    expect(pool.calls).toHaveLength(1);
    expect(JSON.parse(pool.calls[0]!.inputs.settlements!.value as string)).toEqual([
      { id: ID1, lock_id: LOCK },
      { id: ID2, lock_id: LOCK },
    ]);
    expect(await store.ack([])).toBe(0);
    expect(pool.calls).toHaveLength(1);
  });

  it('release and renew are fenced booleans; renew runs under a request timeout of the heartbeat beat', async () => {
    let affected = 1;
    const { pool, store } = await readyStore(() => [[{ affected }]]);
    expect(await store.release({ id: ID1, lockId: LOCK }, -5)).toBe(true);
    expect(pool.calls[0]!.inputs.delay_ms!.value).toBe(0);
    expect(pool.calls[0]!.inputs.lock_id!.value).toBe(LOCK);
    expect(await store.renew({ id: ID1, lockId: LOCK }, 30_000)).toBe(true);
    expect(pool.calls[1]!.requestTimeout).toBe(10_000);
    affected = 0;
    expect(await store.renew({ id: ID1, lockId: LOCK }, 30_000)).toBe(false);
    expect(await store.release({ id: ID1, lockId: LOCK }, 0)).toBe(false);
    expect([30_000, 31_000, 100, 1].map(renewRequestTimeoutMs)).toEqual([10_000, 11_000, 1000, 1000]);
    expect(renewRequestTimeoutMs(Number.MAX_SAFE_INTEGER)).toBe(2_147_483_647);
  });

  it('dead-letter move binds the fence, the new row and the headers as JSON; 0 = fence lost', async () => {
    let moved = 1;
    const { pool, store } = await readyStore(() => [[{ moved }]]);
    const move = {
      source: { id: ID1, lockId: LOCK },
      newId: ID2,
      deadLetterQueue: 'dlq',
      payloadJson: '{}',
      headers: { 'AR-DeadLetter-Reason': 'boom', 'AR-DeadLetter-Source-Queue': 'w' },
      reason: 'boom\nline2',
    };
    expect(await store.deadLetter(move)).toBe(true);
    const inputs = pool.calls[0]!.inputs;
    expect(Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, v.value]))).toEqual({
      source_id: ID1,
      lock_id: LOCK,
      new_id: ID2,
      dlq: 'dlq',
      payload_json: '{}',
      headers_json: '{"AR-DeadLetter-Reason":"boom","AR-DeadLetter-Source-Queue":"w"}',
      reason: 'boom\nline2',
    });
    moved = 0;
    expect(await store.deadLetter(move)).toBe(false);
  });

  it('prune passes the negative retention and returns the rows deleted', async () => {
    const { pool, store } = await readyStore(() => [[{ deleted: 1000 }]]);
    expect(await store.pruneDeadLetterBatch('dlq', 86_400_000)).toBe(1000);
    expect(pool.calls[0]!.inputs.neg_retention_ms!.value).toBe(-86_400_000);
  });

  it('hasMessage reads the bit (true or 1) and binds id and queue', async () => {
    let present: unknown = true;
    const { pool, store } = await readyStore(() => [[{ present }]]);
    expect(await store.hasMessage('dlq', ID1)).toBe(true);
    expect(pool.calls[0]!.inputs.queue!.value).toBe('dlq');
    expect(pool.calls[0]!.inputs.id!.value).toBe(ID1);
    present = 1;
    expect(await store.hasMessage('dlq', ID1)).toBe(true);
    present = false;
    expect(await store.hasMessage('dlq', ID1)).toBe(false);
  });

  it('queue stats, dead-letter listing, requeue and delete map their rows', async () => {
    const created = at('2030-01-01T00:00:00Z');
    const { pool, store } = await readyStore((call) => {
      if (call.text.includes('AS dead_lettered')) {
        return [[{ ready: 3, delayed: 1, leased: 2, oldest_ready_age_seconds: 12.5, dead_lettered: 4 }]];
      }
      if (call.text.startsWith('SELECT TOP (@top)')) {
        return [
          [
            { id: ID1, payload_json: '{"x":1}', headers_json: '{"k":"v"}', dead_letter_reason: null, attempts: 0, created_at: created },
            { id: ID2, payload_json: '2', headers_json: '{}', dead_letter_reason: 'r', attempts: 3, created_at: created },
          ],
        ];
      }
      return [[{ affected: 1 }]];
    });
    expect(await store.queueStats('w', 'dlq')).toEqual({
      queue: 'w',
      ready: 3,
      delayed: 1,
      leased: 2,
      deadLettered: 4,
      oldestReadyAgeSeconds: 12.5,
    });
    expect(await store.listDeadLetters('dlq', 'w', 50)).toEqual([
      // attempts 0: a row moved without them (another host, an older version) lists them as unknown
      { id: ID1.toLowerCase(), sourceQueue: 'w', reason: null, payloadJson: '{"x":1}', headers: { k: 'v' }, attempts: null, createdAt: created },
      { id: ID2.toLowerCase(), sourceQueue: 'w', reason: 'r', payloadJson: '2', headers: {}, attempts: 3, createdAt: created },
    ]);
    expect(pool.calls[1]!.inputs.top!.value).toBe(50);
    expect(await store.requeueDeadLetter('dlq', 'w', ID1)).toBe(true);
    expect(await store.deleteDeadLetter('dlq', 'w', ID1)).toBe(true);
    expect(pool.calls[3]!.inputs.source!.value).toBe('w');
  });

  it('queue stats of an empty queue report no oldest age', async () => {
    const { store } = await readyStore(() => [[{ ready: 0, delayed: 0, leased: 0, oldest_ready_age_seconds: null, dead_lettered: 0 }]]);
    expect((await store.queueStats('w', 'dlq')).oldestReadyAgeSeconds).toBeNull();
  });

  it('no queue name, id or payload ever reaches the statement text: values travel as parameters only', async () => {
    const { pool, store } = await readyStore(() => [[{ affected: 1, moved: 1, deleted: 0 }]]);
    await store.publish([msg(ID1)]).catch(() => undefined);
    await store.claim('secret_queue_name', 1, 1000);
    await store.release({ id: ID1, lockId: LOCK }, 10);
    await store.pruneDeadLetterBatch('secret_queue_name', 1000);
    await store.listDeadLetters('secret_queue_name', 'secret_queue_name', 1);
    await store.queueStats('secret_queue_name', 'secret_queue_name');
    expect(pool.calls.length).toBeGreaterThanOrEqual(6);
    for (const call of pool.calls) {
      expect(call.text).not.toMatch(/secret_queue_name|a1b2c3d4|"n":1/i);
    }
  });

  it('now reads the database clock without requiring the schema', async () => {
    const clock = at('2030-01-01T00:00:00Z');
    const pool = new FakePool(() => [[{ now: clock }]]);
    const store = new SqlServerTransportStore(pool.asPool(), { schema: 'dbo', table: 'jobs', autoCreateSchema: false, logger: silentLogger });
    expect(await store.now()).toBe(clock);
    expect(pool.calls.map((c) => c.text)).toEqual(['SELECT SYSUTCDATETIME() AS now;']);
    await store.close();
    expect(pool.closed).toBe(true);
  });
});

describe('SQL Server store: keyed publishes (dedup keys and debounce)', () => {
  const keyed = (id: string, key: string, mode: 'drop' | 'debounce' = 'drop', extra: Partial<OutgoingMessage> = {}) =>
    msg(id, { dedup: { key, windowMs: 60_000.4, mode }, ...extra });
  const ID3 = 'a1b2c3d4-0000-4000-8000-000000000003';
  const HOLDER = 'C0000000-0000-4000-8000-000000000009';

  it('unkeyed messages go in the plain batch, keyed ones in one keyed batch, and the answers keep the publish order', async () => {
    const t = at('2030-01-01T00:00:00.000Z');
    const { pool, store } = await readyStore((call) => {
      if (call.text.includes('[dbo].[jobs_dedup]')) {
        return [[
          { ord: 1, id: HOLDER, inserted: false, debounced: false, available_at: t, existing_queue: 'secret_queue_name' },
          { ord: 0, id: ID1.toUpperCase(), inserted: true, debounced: false, available_at: t, existing_queue: 'secret_queue_name' },
          { ord: 2, id: HOLDER, inserted: false, debounced: true, available_at: t, existing_queue: 'secret_queue_name' },
        ]];
      }
      return [[{ id: ID2.toUpperCase(), available_at: t }]];
    });
    const out = await store.publish([keyed(ID1, 'a'), msg(ID2), keyed(ID3, 'b'), keyed('a1b2c3d4-0000-4000-8000-000000000004', 'c', 'debounce', { delayMs: 2000 })]);
    expect(out).toEqual([
      { id: ID1.toLowerCase(), inserted: true, availableAt: t },
      { id: ID2, inserted: true, availableAt: t },
      { id: HOLDER.toLowerCase(), inserted: false, availableAt: t, existingQueue: 'secret_queue_name' },
      { id: HOLDER.toLowerCase(), inserted: false, availableAt: t, existingQueue: 'secret_queue_name', debounced: true },
    ]);
    expect(pool.calls.map((c) => c.text.includes('[dbo].[jobs_dedup]'))).toEqual([false, true]);
    const batch = JSON.parse(pool.calls[1]!.inputs.batch!.value as string) as Array<Record<string, unknown>>;
    expect(batch[2]).toEqual({
      queue: 'secret_queue_name',
      dedup_key: 'c.', // terminated: SQL Server's comparisons ignore trailing spaces
      id: 'a1b2c3d4-0000-4000-8000-000000000004',
      window_ms: 60_000,
      debounce: true,
      payload_json: '{"n":1}',
      headers_json: '{"AR-Correlation-Id":"c-1"}',
      delay_ms: 2000,
      priority: 0,
      ord: 2,
    });
  });

  it('a holder whose row is gone answers availableAt null; a key used twice runs in two keyed batches', async () => {
    let round = 0;
    const t = at('2030-01-01T00:00:00.000Z');
    const { pool, store } = await readyStore(() => {
      round++;
      return round === 1
        ? [[{ ord: 0, id: ID1, inserted: true, debounced: false, available_at: t, existing_queue: 'secret_queue_name' }]]
        : [[{ ord: 0, id: HOLDER, inserted: false, debounced: false, available_at: null, existing_queue: null }]];
    });
    const out = await store.publish([keyed(ID1, 'same'), keyed(ID2, 'same')]);
    expect(out).toEqual([
      { id: ID1.toLowerCase(), inserted: true, availableAt: t },
      { id: HOLDER.toLowerCase(), inserted: false, availableAt: null },
    ]);
    expect(pool.calls).toHaveLength(2);
  });

  it('a lost race for a new key (2627) re-runs the keyed batch', async () => {
    let attempt = 0;
    const t = at('2030-01-01T00:00:00.000Z');
    const { pool, store } = await readyStore(() => {
      if (++attempt === 1) throw sqlError(2627, 14, 'Violation of PRIMARY KEY constraint');
      return [[{ ord: 0, id: HOLDER, inserted: false, debounced: false, available_at: t, existing_queue: 'secret_queue_name' }]];
    });
    expect(await store.publish([keyed(ID1, 'k')])).toEqual([{ id: HOLDER.toLowerCase(), inserted: false, availableAt: t, existingQueue: 'secret_queue_name' }]);
    expect(pool.calls).toHaveLength(2);
  });
});
