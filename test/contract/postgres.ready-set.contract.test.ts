// The ready set's PostgreSQL internals (stores/postgres/ready-set.ts) that the store-agnostic suite cannot reach:
// a key left vacant by a removal that raced a publisher is promoted by the next claim; a vacant key with no rows
// left heals; version 18's backfill files the rows of a table from before the ready set as the app would have.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { transportNames } from '../../shared/sql/identifiers';
import type { OpenedStores } from '../../shared/stores/open';
import { DEFAULT_TRANSPORT_TABLE } from '../../shared/stores/options';
import { pgReadySetBackfill } from '../../shared/stores/postgres/ready-set';
import { message } from '../support/messages';
import { announce } from './fixtures';
import { closeSharedPglite, schemaDbFixtures, type SchemaDb } from './schema-fixtures';

afterAll(() => closeSharedPglite());

const LOCK = 30_000;
const keyed = (queue: string, key: string, n: number, extra = {}) => message(queue, { key, n }, { orderingKey: key, ...extra });
const nOf = (c: { payloadJson: string }) => (JSON.parse(c.payloadJson) as { n: number }).n;

for (const fixture of schemaDbFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] ready set internals`, { timeout: 120_000 }, () => {
    let d: SchemaDb | undefined;
    let stores: OpenedStores | undefined;
    afterEach(async () => {
      await stores?.close();
      await d?.close();
      stores = d = undefined;
    });
    const open = async () => {
      d = await fixture.create();
      stores = await d.open(true);
      await stores.migrator.apply();
      const t = `"${d.schema}"."${DEFAULT_TRANSPORT_TABLE}"`;
      const k = `"${d.schema}"."${DEFAULT_TRANSPORT_TABLE}_keys"`;
      return { d, store: stores.transport, t, k };
    };
    const keyRow = async (db: SchemaDb, k: string, queue: string, key: string) =>
      (await db.client.query<{ pending: number; vacant: boolean }>(`SELECT pending, vacant FROM ${k} WHERE queue = $1 AND ordering_key = $2`, [queue, key])).rows[0];

    it('a key a raced removal left vacant: the next claim takes its next job and clears the mark', async () => {
      const { d, store, t, k } = await open();
      await store.publish([keyed('rs', 'a', 1), keyed('rs', 'a', 2), keyed('rs', 'a', 3), message('rs', { n: 0 })]);
      const first = await store.claim('rs', 10, LOCK);
      expect(first.map(nOf).sort()).toEqual([0, 1]);
      // what an ack leaves when a publisher of the key committed after its snapshot: the head gone, the count
      // lowered, the key marked vacant, its next job still queued
      await d.client.query(`DELETE FROM ${t} WHERE id = $1`, [first.find((c) => nOf(c) === 1)!.id]);
      await d.client.query(`UPDATE ${k} SET pending = 2, vacant = true WHERE queue = 'rs' AND ordering_key = 'a'`);
      expect((await store.claimOutlook('rs')).due).toBe(true);
      const next = await store.claim('rs', 10, LOCK);
      expect(next.map(nOf)).toEqual([2]);
      expect(await keyRow(d, k, 'rs', 'a')).toEqual({ pending: 2, vacant: false });
      expect(await store.claim('rs', 10, LOCK)).toEqual([]); // 3 waits behind 2
      await store.ack(next);
      expect((await store.claim('rs', 10, LOCK)).map(nOf)).toEqual([3]);
    });

    it('a vacant key with no job left heals: its count goes to 0 and the next publish is its head', async () => {
      const { d, store, k } = await open();
      await d.client.query(`INSERT INTO ${k} (queue, ordering_key, pending, vacant) VALUES ('rs2', 'ghost', 3, true)`);
      expect(await store.claim('rs2', 10, LOCK)).toEqual([]);
      expect(await keyRow(d, k, 'rs2', 'ghost')).toEqual({ pending: 0, vacant: false });
      await store.publish([keyed('rs2', 'ghost', 1)]);
      expect((await store.claim('rs2', 10, LOCK)).map(nOf)).toEqual([1]);
    });

    it("version 18's backfill files rows written before the ready set: keys counted, each key's first job its head, delayed jobs scheduled", async () => {
      const { d, store, t, k } = await open();
      // rows as a release before version 18 wrote them: no state, no seq, no key counts (created_at gives the order)
      const rows: Array<[string, string | null, number]> = [
        ['bf', 'a', 0], ['bf', 'a', 1], ['bf', 'a', 2], ['bf', 'b', 3], ['bf', null, 4], ['bf', null, 5],
      ];
      for (const [queue, key, n] of rows) {
        await d.client.query(
          `INSERT INTO ${t} (id, queue, payload_json, ordering_key, created_at, available_at)
           VALUES (gen_random_uuid(), $1, $2, $3, now() - ($4::int * interval '-1 second') - interval '1 hour', now() - interval '1 hour' + CASE WHEN $4::int = 5 THEN interval '3 hours' ELSE interval '0' END)`,
          [queue, JSON.stringify({ key, n }), key, n],
        );
      }
      await d.client.query(`UPDATE ${t} SET state = NULL, seq = NULL WHERE queue = 'bf'`);
      await d.client.query(`DELETE FROM ${k}`);
      for (const s of pgReadySetBackfill(transportNames(d.schema, DEFAULT_TRANSPORT_TABLE, 'postgres'))) await d.client.query(s.text);
      const filed = await d.client.query<{ n: number; state: number | null; seq: string | null }>(
        `SELECT (payload_json::jsonb ->> 'n')::int AS n, state, seq FROM ${t} WHERE queue = 'bf' ORDER BY 1`,
      );
      expect(filed.rows.map((r) => [r.n, r.state])).toEqual([[0, null], [1, 2], [2, 2], [3, null], [4, null], [5, 1]]);
      expect(filed.rows.filter((r) => r.n <= 3).every((r) => r.seq !== null)).toBe(true);
      expect(await keyRow(d, k, 'bf', 'a')).toEqual({ pending: 3, vacant: false });
      // and the queue runs as the app would have: a's jobs one at a time, in order
      const first = await store.claim('bf', 10, LOCK);
      expect(first.map(nOf).sort()).toEqual([0, 3, 4]);
      await store.ack(first);
      expect((await store.claim('bf', 10, LOCK)).map(nOf)).toEqual([1]);
    });
  });
}
