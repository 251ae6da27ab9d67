// The ready set's SQL Server internals (stores/sqlserver/ready-set.ts) that the store-agnostic suite cannot reach: a
// head's ack promotes its key's next job itself (the key is never left vacant), a count gone wrong leaves the key
// vacant and the next claim repairs it, a vacant key's next job is taken by the claim batch, and the keyed and
// batched backfills (versions 21 and 23) file the rows of a table from before the ready set as the app would have.
// Runs where MSSQL_CONNECTION_STRING points (on another TDS engine through its shims, engine-gaps.ts).
import * as sql from 'mssql';
import { afterEach, describe, expect, it } from 'vitest';
import { transportNames } from '../../shared/sql/identifiers';
import { DEFAULT_TRANSPORT_TABLE } from '../../shared/stores/options';
import { createSqlServerPool } from '../../shared/stores/sqlserver/connection';
import { fileExistingRowsBatched, fileKeyedRows } from '../../shared/stores/sqlserver/ready-set';
import { message } from '../support/messages';
import { skipOnGap, shimsFor, tdsEngine } from './engine-gaps';
import { announce, type Harness, MSSQL_SKIP_REASON } from './fixtures';

const LOCK = 30_000;
const keyed = (queue: string, key: string, n: number, extra = {}) => message(queue, { key, n }, { orderingKey: key, ...extra });
const nOf = (c: { payloadJson: string }) => (JSON.parse(c.payloadJson) as { n: number }).n;
const cs = process.env.MSSQL_CONNECTION_STRING;

describe.skipIf(!announce({ name: 'sqlserver', skipReason: MSSQL_SKIP_REASON }))('[sqlserver] ready set internals', { timeout: 120_000 }, () => {
  let h: Harness | undefined;
  let admin: sql.ConnectionPool | undefined;
  afterEach(async () => {
    await admin?.close().catch(() => undefined);
    await h?.close();
    h = admin = undefined;
  });
  const open = async () => {
    const { sqlServerHarness } = await import('./sqlserver-harness');
    const { newSchema } = await import('./fixtures');
    h = await sqlServerHarness(cs!, newSchema(), true);
    await h.store.ensureSchema();
    admin = createSqlServerPool({ connectionString: cs!, poolMax: 2, poolMin: 0, connectTimeoutMs: 15_000, requestTimeoutMs: 30_000 });
    await admin.connect();
    const shim = shimsFor(await tdsEngine());
    const names = transportNames(h.schema, DEFAULT_TRANSPORT_TABLE, 'sqlserver');
    const run = async (text: string) => (await admin!.request().query(shim ? shim(text) : text)).recordset as Array<Record<string, unknown>>;
    const t = `[${h.schema}].[${DEFAULT_TRANSPORT_TABLE}]`;
    const k = `[${h.schema}].[${DEFAULT_TRANSPORT_TABLE}_keys]`;
    const keyRow = async (queue: string, key: string) => {
      const [row] = await run(`SELECT pending, CAST(vacant AS int) AS vacant FROM ${k} WHERE queue = N'${queue}' AND ordering_key = N'${key}'`);
      return row && { pending: Number(row.pending), vacant: Number(row.vacant) === 1 };
    };
    const states = async (queue: string) =>
      (await run(`SELECT JSON_VALUE(payload_json, '$.n') AS n, state FROM ${t} WHERE queue = N'${queue}'`))
        .map((r) => [Number(r.n), r.state === null ? null : Number(r.state)] as const)
        .sort((a, b) => a[0] - b[0]);
    return { store: h.store, names, run, t, k, keyRow, states };
  };

  it("a head's ack promotes its key's next job in the ack's transaction: ready when due, scheduled when not; the key is never vacant", async (ctx) => {
    await skipOnGap('sqlserver', ctx, 'updateThroughCte');
    const { store, keyRow, states } = await open();
    await store.publish([keyed('rs', 'a', 1), keyed('rs', 'a', 2), { ...keyed('rs', 'b', 3) }, { ...keyed('rs', 'b', 4), delayMs: 60_000 }]);
    expect(await states('rs')).toEqual([[1, null], [2, 2], [3, null], [4, 2]]);
    const heads = await store.claim('rs', 10, LOCK);
    expect(heads.map(nOf).sort()).toEqual([1, 3]);
    await store.ack(heads);
    // a2 is due: in the ready set; b4 is delayed: scheduled; neither key is vacant
    expect(await states('rs')).toEqual([[2, null], [4, 1]]);
    expect(await keyRow('rs', 'a')).toEqual({ pending: 1, vacant: false });
    expect(await keyRow('rs', 'b')).toEqual({ pending: 1, vacant: false });
    expect((await store.claim('rs', 10, LOCK)).map(nOf)).toEqual([2]);
  });

  it('a count gone wrong (more jobs counted than the key has): the ack marks the key vacant and the next claim heals it', async (ctx) => {
    await skipOnGap('sqlserver', ctx, 'updateThroughCte');
    const { store, run, k, keyRow } = await open();
    await store.publish([keyed('rs2', 'ghost', 1)]);
    await run(`UPDATE ${k} SET pending = 3 WHERE queue = N'rs2' AND ordering_key = N'ghost'`);
    const [head] = await store.claim('rs2', 10, LOCK);
    expect(await store.ack([head!])).toBe(1);
    expect(await keyRow('rs2', 'ghost')).toEqual({ pending: 2, vacant: true });
    expect((await store.claimOutlook('rs2')).due).toBe(true); // the vacant key is work for a claim
    expect(await store.claim('rs2', 10, LOCK)).toEqual([]);
    expect(await keyRow('rs2', 'ghost')).toEqual({ pending: 0, vacant: false });
    await store.publish([keyed('rs2', 'ghost', 2)]);
    expect((await store.claim('rs2', 10, LOCK)).map(nOf)).toEqual([2]);
  });

  it("a vacant key whose next job is queued: the claim batch takes that job and clears the mark", async (ctx) => {
    await skipOnGap('sqlserver', ctx, 'updateThroughCte');
    const { store, run, t, k, keyRow } = await open();
    await store.publish([keyed('rs3', 'a', 1), keyed('rs3', 'a', 2), keyed('rs3', 'a', 3), message('rs3', { n: 0 })]);
    const first = await store.claim('rs3', 10, LOCK);
    expect(first.map(nOf).sort()).toEqual([0, 1]);
    // what a remover of an earlier release leaves: the head gone, the count lowered, the key vacant, a2 still queued
    await run(`DELETE FROM ${t} WHERE id = '${first.find((c) => nOf(c) === 1)!.id}'`);
    await run(`UPDATE ${k} SET pending = 2, vacant = 1 WHERE queue = N'rs3' AND ordering_key = N'a'`);
    const next = await store.claim('rs3', 10, LOCK);
    expect(next.map(nOf)).toEqual([2]);
    expect(await keyRow('rs3', 'a')).toEqual({ pending: 2, vacant: false });
    expect(await store.claim('rs3', 10, LOCK)).toEqual([]); // 3 waits behind 2
    await store.ack(next);
    expect((await store.claim('rs3', 10, LOCK)).map(nOf)).toEqual([3]);
  });

  it("versions 21 and 23 file rows written before the ready set: keys counted, each key's first job its head, delayed jobs scheduled", async (ctx) => {
    await skipOnGap('sqlserver', ctx, 'updateThroughCte');
    const { store, names, run, t, k, keyRow, states } = await open();
    // rows as a release before version 20 wrote them: no state, no seq, no key counts (created_at gives the order)
    const rows: Array<[string | null, number, boolean]> = [['a', 0, false], ['a', 1, false], ['a', 2, false], ['b', 3, false], [null, 4, false], [null, 5, true]];
    for (const [key, n, delayed] of rows) {
      await run(
        `INSERT INTO ${t} (id, queue, payload_json, ordering_key, created_at, available_at)
         VALUES (NEWID(), N'bf', N'{"n":${n}}', ${key === null ? 'NULL' : `N'${key}'`}, DATEADD(SECOND, ${n}, DATEADD(HOUR, -1, SYSUTCDATETIME())),
                 DATEADD(HOUR, ${delayed ? 2 : -1}, SYSUTCDATETIME()))`,
      );
    }
    await run(`UPDATE ${t} SET state = NULL, seq = NULL WHERE queue = N'bf'`);
    await run(`DELETE FROM ${k}`);
    for (const step of fileKeyedRows(names)) await run(step.lines.join('\n'));
    await run(fileExistingRowsBatched(names).join('\n'));
    expect(await states('bf')).toEqual([[0, null], [1, 2], [2, 2], [3, null], [4, null], [5, 1]]);
    const seqs = await run(`SELECT JSON_VALUE(payload_json, '$.n') AS n, seq FROM ${t} WHERE queue = N'bf' AND ordering_key = N'a'`);
    const order = seqs.map((r) => [Number(r.n), Number(r.seq)] as const).sort((x, y) => x[1] - y[1]).map(([n]) => n);
    expect(order).toEqual([0, 1, 2]); // numbered in their old (created_at, id) order
    expect(await keyRow('bf', 'a')).toEqual({ pending: 3, vacant: false });
    // idempotent: a second run changes nothing
    for (const step of fileKeyedRows(names)) await run(step.lines.join('\n'));
    expect(await keyRow('bf', 'a')).toEqual({ pending: 3, vacant: false });
    // and the queue runs as the app would have: a's jobs one at a time, in order
    const first = await store.claim('bf', 10, LOCK);
    expect(first.map(nOf).sort()).toEqual([0, 3, 4]);
    await store.ack(first);
    expect((await store.claim('bf', 10, LOCK)).map(nOf)).toEqual([1]);
  });
});
