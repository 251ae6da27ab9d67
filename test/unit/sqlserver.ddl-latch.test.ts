// Schema steps of the SQL Server store against a scripted pool: phase order, single flight, the retry-after
// latch (spec §3.2) on a virtual clock, collision diagnosis, and the operator path.

import { describe, expect, it } from 'vitest';
import { silentLogger, type Logger } from '../../shared/log';
import { transportNames } from '../../shared/sql/identifiers';
import { shouldLatchTableLockFailure, SqlServerTransportStore } from '../../shared/stores/sqlserver/store';
import type { TransportCatalog } from '../../shared/stores/sqlserver/verify';
import {
  absentCatalog,
  catalogRecordsets,
  FakePool,
  isCatalogQuery,
  isIndexBuild,
  isHistoryDdl,
  isPhase1,
  isTableLock,
  specCatalog,
  sqlError,
  type FakeCall,
} from './sqlserver.fakes';

const names = transportNames('dbo', 'jobs', 'sqlserver');

interface Script {
  catalog: () => TransportCatalog;
  phase1?: () => void;
  lock?: () => void;
  build?: () => void;
}

/** A pool whose DDL succeeds unless a step throws; the catalog gains the indexes once a build ran. */
function scriptedPool(script: Partial<Script> = {}) {
  let built = false;
  const s: Script = { catalog: () => specCatalog(names, { indexes: built }), ...script };
  const pool = new FakePool((call: FakeCall) => {
    if (isCatalogQuery(call)) return catalogRecordsets(s.catalog());
    if (isPhase1(call)) s.phase1?.();
    else if (isTableLock(call)) s.lock?.();
    else if (isIndexBuild(call)) {
      s.build?.();
      built = true;
    } else if (call.text.includes('OPENJSON(@batch)')) return [[]];
    return [];
  });
  return pool;
}

function store(pool: FakePool, options: { autoCreateSchema?: boolean; logger?: Logger } = {}, clock = { t: 0 }) {
  return new SqlServerTransportStore(
    pool.asPool(),
    { schema: 'dbo', table: 'jobs', autoCreateSchema: options.autoCreateSchema ?? true, logger: options.logger ?? silentLogger },
    { now: () => clock.t, random: () => 0.5 },
  );
}

const kinds = (pool: FakePool) =>
  pool.calls.map((c) => (isCatalogQuery(c) ? 'catalog' : isHistoryDdl(c) ? 'history' : isPhase1(c) ? 'phase1' : isTableLock(c) ? 'lock' : isIndexBuild(c) ? 'build' : 'op'));

describe('SQL Server schema creation', () => {
  it('runs phase 1, commits, then builds missing indexes under the table lock with an hour-long timeout, then verifies', async () => {
    const pool = scriptedPool();
    await store(pool).ensureSchema();
    expect(kinds(pool)).toEqual(['phase1', 'history', 'catalog', 'lock', 'build', 'catalog']);
    expect(pool.events).toEqual(['begin', 'commit', 'begin', 'commit', 'begin', 'commit']);
    const [phase1, history, catalog1, lock, build, catalog2] = pool.calls;
    expect(phase1!.inTransaction && history!.inTransaction && lock!.inTransaction && build!.inTransaction).toBe(true);
    expect(catalog1!.inTransaction || catalog2!.inTransaction).toBe(false); // verification outside the DDL transaction
    expect(build!.requestTimeout).toBe(3_600_000);
    expect(catalog1!.inputs.schema!.value).toBe('dbo');
    expect(catalog1!.inputs.table!.value).toBe('jobs');
  });

  it('an up-to-date schema takes no table lock and builds nothing', async () => {
    const pool = scriptedPool({ catalog: () => specCatalog(names) });
    await store(pool).ensureSchema();
    expect(kinds(pool)).toEqual(['phase1', 'history', 'catalog']);
  });

  it('is single-flight and latched: concurrent callers share one attempt; later calls touch nothing', async () => {
    const pool = scriptedPool();
    const s = store(pool);
    await Promise.all([s.ensureSchema(), s.ensureSchema(), s.ensureSchema()]);
    expect(kinds(pool).filter((k) => k === 'phase1')).toHaveLength(1);
    const count = pool.calls.length;
    await s.ensureSchema();
    await s.publish([]);
    expect(pool.calls.length).toBe(count);
  });

  it('a failed attempt is not latched: the next call tries again', async () => {
    let fail = true;
    const pool = scriptedPool({
      phase1: () => {
        if (fail) throw sqlError(10054, 20, 'connection reset');
      },
    });
    const s = store(pool);
    await expect(s.ensureSchema()).rejects.toThrow(/connection reset/);
    fail = false;
    await s.ensureSchema();
    expect(kinds(pool).filter((k) => k === 'phase1')).toHaveLength(2);
  });

  it.each([
    [51000, 16, true],
    [1222, 16, true],
    [10054, 20, false],
    [10054, 0, false],
    [40613, 0, false],
    [1205, 13, false],
    [51000, 20, false],
    [1222, 20, false],
  ])('table-lock step failing with (%i, class %i) latches: %s', async (number, severity, latches) => {
    expect(shouldLatchTableLockFailure(sqlError(number, severity))).toBe(latches);
    const pool = scriptedPool({
      lock: () => {
        throw sqlError(number, severity, `lock step failed ${number}`);
      },
    });
    const s = store(pool);
    await expect(s.ensureSchema()).rejects.toThrow();
    const before = pool.calls.length;
    await expect(s.ensureSchema()).rejects.toThrow();
    expect(pool.calls.length > before).toBe(!latches);
    expect(pool.events.filter((e) => e === 'rollback').length).toBeGreaterThanOrEqual(1);
  });

  it('inside the retry-after window ensureSchema fails at once without connecting, naming the cause; after it, retries', async () => {
    const clock = { t: 1_000_000 };
    let lockFails = true;
    const warnings: unknown[][] = [];
    const logger: Logger = { ...silentLogger, warn: (...args: unknown[]) => void warnings.push(args) };
    const pool = scriptedPool({
      lock: () => {
        if (lockFails) throw sqlError(51000, 16, 'AsyncResponse transport could not take its table lock within 5000 ms.');
      },
    });
    const s = store(pool, { logger }, clock);
    const first = await s.ensureSchema().then(() => undefined, (e: Error) => e);
    expect(first?.message).toMatch(/could not take its table lock within 5000 ms/);
    expect((first?.cause as { number?: number } | undefined)?.number).toBe(51000);
    expect(warnings).toHaveLength(1); // one log entry per failure, with the error and the window
    expect(warnings[0]![1]).toBe(first?.cause);

    pool.connected = false; // any connect or query from here on would show up
    const calls = pool.calls.length;
    clock.t += 44_999; // window = 30 s + 0.5 * 30 s = 45 s
    const inside = await s.ensureSchema().then(() => undefined, (e: Error) => e);
    expect(inside?.message).toMatch(/could not take its table lock within 5000 ms/);
    expect((inside?.cause as { number?: number } | undefined)?.number).toBe(51000);
    await expect(s.claim('worker', 1, 30_000)).rejects.toThrow(/table lock/);
    expect(pool.calls.length).toBe(calls);
    expect(pool.connectCalls).toBe(0);

    lockFails = false;
    clock.t += 2;
    await s.ensureSchema();
    expect(pool.connectCalls).toBe(1);
    expect(kinds(pool).slice(-4)).toEqual(['catalog', 'lock', 'build', 'catalog']);
  });

  it.each([9002, 1105, -2])('an index build failing with %i latches the window, naming the build', async (number) => {
    const clock = { t: 0 };
    const pool = scriptedPool({
      build: () => {
        throw sqlError(number, 17);
      },
    });
    const s = store(pool, {}, clock);
    await expect(s.ensureSchema()).rejects.toThrow(new RegExp(`index build on \\[dbo\\]\\.\\[jobs\\] failed \\(error ${number}\\) and was rolled back`));
    expect(pool.events.at(-1)).toBe('rollback');
    const calls = pool.calls.length;
    clock.t = 29_999;
    await expect(s.ensureSchema()).rejects.toThrow(/index build/);
    expect(pool.calls.length).toBe(calls);
  });

  it('a phase-1 failure caused by a name collision is diagnosed with the fix; the original error is the cause', async () => {
    const collision = sqlError(2714, 16, "There is already an object named 'jobs' in the database.");
    const pool = scriptedPool({
      phase1: () => {
        throw collision;
      },
      catalog: () => ({ ...absentCatalog, objects: [{ name: 'jobs', type: 'V ', type_desc: 'VIEW', is_target: false }] }),
    });
    const error = await store(pool).ensureSchema().then(() => undefined, (e: Error) => e);
    expect(error?.message).toMatch(/occupied by a view.*Give this component its own object names/);
    expect(error?.cause).toBe(collision);
  });

  it('a phase-1 failure with nothing wrong in the catalog surfaces the original error unwrapped', async () => {
    const denied = sqlError(262, 14, 'CREATE TABLE permission denied in database');
    const pool = scriptedPool({
      phase1: () => {
        throw denied;
      },
      catalog: () => absentCatalog,
    });
    await expect(store(pool).ensureSchema()).rejects.toBe(denied);
  });

  it('operator path: no DDL; an absent table fails every operation with the fix and is re-checked next time', async () => {
    let catalog: TransportCatalog = absentCatalog;
    const pool = scriptedPool({ catalog: () => catalog });
    const s = store(pool, { autoCreateSchema: false });
    await expect(s.publish([{ id: '00000000-0000-4000-8000-000000000001', queue: 'w', payloadJson: '{}', headers: {}, delayMs: 0 }])).rejects.toThrow(
      /\[dbo\]\.\[jobs\] does not exist.*npm run schema -- apply.*AUTO_CREATE_SCHEMA=true/s,
    );
    catalog = specCatalog(names, { indexes: false });
    const warnings: string[] = [];
    const s2 = store(pool, { autoCreateSchema: false, logger: { ...silentLogger, warn: (m: string) => void warnings.push(m) } });
    await s2.ensureSchema();
    await s.ensureSchema();
    expect(kinds(pool).every((k) => k === 'catalog' || k === 'op')).toBe(true);
    expect(warnings).toHaveLength(5);
    expect(warnings.slice(0, 4).map((w) => /serving the ready set's ([a-z ]+),/.exec(w)?.[1])).toEqual(['ready set', 'scheduled rows', 'leases', 'key order']);
    expect(warnings[4]).toMatch(/no enabled, unfiltered index keyed \(queue, dead_letter_source\)/);
  });

  it('behind the schema gate the indexes are the migrations\' (deferrable versions may still be building them): no table lock, no build, a warning each', async () => {
    const pool = scriptedPool({ catalog: () => specCatalog(names, { indexes: false }) });
    const warnings: string[] = [];
    let gated = 0;
    const s = new SqlServerTransportStore(pool.asPool(), {
      schema: 'dbo',
      table: 'jobs',
      autoCreateSchema: true,
      logger: { ...silentLogger, warn: (m: string) => void warnings.push(m) },
      schemaGate: async () => void gated++,
    });
    await s.ensureSchema();
    expect(gated).toBe(1);
    expect(kinds(pool)).toEqual(['phase1', 'history', 'catalog']);
    expect(warnings.filter((w) => /serving the ready set's/.test(w))).toHaveLength(4);
  });

  it('operator path: a misshapen table fails with the column, the expectation and what was found', async () => {
    const bad = specCatalog(names);
    bad.columns = bad.columns.map((c) => (c.name === 'payload_json' ? { ...c, max_length: 400 } : c));
    const s = store(scriptedPool({ catalog: () => bad }), { autoCreateSchema: false });
    await expect(s.ensureSchema()).rejects.toThrow(/'payload_json'.*expected nvarchar\(max\) NOT NULL; found nvarchar\(200\) NOT NULL/);
  });
});
