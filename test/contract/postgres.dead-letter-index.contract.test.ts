// The dead-letter source index (schema version 4, over dead letters only since 18, keyed by time too since 22) on
// PGlite and the PostgreSQL server: the dead-letter statements stay correct on a migrated schema, and with many
// dead letters of other queues the planner counts a queue's dead letters through the index (issue 9 §5), not with a
// sequential scan that parses every header; the list reads a source's newest in index order, with no index over
// live rows (version 22 dropped the created index); the prune reads only the dead letters it deletes.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { OpenedStores } from '../../shared/stores/open';
import { deadLetterHeaders } from '../../shared/transport/headers';
import { pgStatements, SOURCE_QUEUE } from '../../shared/stores/postgres/statements';
import { transportNames } from '../../shared/sql/identifiers';
import { DEAD_LETTER_SOURCE_HEADER } from '../../shared/transport/types';
import { message } from '../support/messages';
import { announce } from './fixtures';
import { closeSharedPglite, schemaDbFixtures, type SchemaDb } from './schema-fixtures';
import { explainRolledBack, nodes, type PlanNode } from './plan-nodes';

afterAll(() => closeSharedPglite());

const TABLE = 'asyncresponse_transport_messages';
const DLQ = 'deadletter';


for (const fixture of schemaDbFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] dead-letter source index (schema version 4)`, { timeout: 180_000 }, () => {
    let d: SchemaDb | undefined;
    let stores: OpenedStores | undefined;
    afterEach(async () => {
      await stores?.close();
      await d?.close();
      stores = d = undefined;
    });

    async function migrated() {
      d = await fixture.create();
      stores = await d.open(true);
      await stores.migrator.apply();
      return { d, store: stores.transport, names: transportNames(d.schema, TABLE, 'postgres') };
    }

    async function bury(queue: string) {
      const store = stores!.transport;
      await store.publish([message(queue, { from: queue })]);
      const [c] = await store.claim(queue, 1, 30_000);
      const newId = randomUUID();
      await store.deadLetter({ source: c!, newId, deadLetterQueue: DLQ, payloadJson: c!.payloadJson, headers: deadLetterHeaders(c!.headers, 'boom', queue), reason: 'boom' });
      return newId;
    }

    it('the migration builds the index on exactly the expression the statements filter on', async () => {
      const { d, names } = await migrated();
      const def = async (index: string) =>
        (await d.client.query<{ def: string }>(`SELECT indexdef AS def FROM pg_indexes WHERE schemaname = $1 AND indexname = $2`, [d.schema, index])).rows.map((x) => x.def);
      const [list] = await def(names.deadLettersListIndex);
      expect(list).toMatch(/USING btree \(queue, \(\s*CASE/);
      expect(list).toContain(`->> '${DEAD_LETTER_SOURCE_HEADER}'`);
      expect(list).toMatch(/END\), created_at\) WHERE/);
      // it covers rows naming a source queue only (a live row never writes it)
      const onlyDeadLetters = new RegExp(`WHERE \\(headers_json ~~ '%${DEAD_LETTER_SOURCE_HEADER}%'::text\\)$`);
      expect(list).toMatch(onlyDeadLetters);
      // version 4's index is dropped by 19; version 18's and the created index (over every row) by 22
      for (const gone of [names.deadLetterIndex, names.deadLettersIndex, names.createdIndex]) expect(await def(gone)).toEqual([]);
    });

    it('stats, list, requeue and delete of dead letters stay exact on the migrated schema, foreign rows included', async () => {
      const { d, store, names } = await migrated();
      const a1 = await bury('a');
      const a2 = await bury('a');
      await bury('b');
      const t = `"${d.schema}"."${TABLE}"`;
      // rows a foreign writer could leave on the dead-letter queue: not JSON, a \u0000 escape, a source of 'a' among other headers
      await d.client.query(`INSERT INTO ${t} (id, queue, payload_json, headers_json) VALUES ($1, $2, '{}', 'not json'), ($3, $2, '{}', $4), ($5, $2, '{}', $6)`, [
        randomUUID(), DLQ, randomUUID(), `{"${DEAD_LETTER_SOURCE_HEADER}":"a","x":"\\u0000"}`, randomUUID(), `{"z":1,"${DEAD_LETTER_SOURCE_HEADER}":"a"}`,
      ]);
      expect((await store.queueStats('a', DLQ)).deadLettered).toBe(3);
      expect((await store.queueStats('b', DLQ)).deadLettered).toBe(1);
      expect((await store.queueStats('A', DLQ)).deadLettered).toBe(0);
      expect((await store.listDeadLetters(DLQ, 'a', 10)).map((x) => x.id)).toEqual(expect.arrayContaining([a1, a2]));
      expect(await store.requeueDeadLetter(DLQ, 'b', a1)).toBe(false); // a's dead letter is not b's
      expect(await store.requeueDeadLetter(DLQ, 'a', a1)).toBe(true);
      expect(await store.deleteDeadLetter(DLQ, 'a', a2)).toBe(true);
      expect((await store.queueStats('a', DLQ)).deadLettered).toBe(1);
      expect((await store.queueStats('a', DLQ)).ready).toBe(1);
      // the indexed expression agrees: the requeued row left the dead-letter queue, the deleted one is gone
      const viaIndex = await d.client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${t} WHERE queue = $1 AND ${SOURCE_QUEUE} = 'a'`,
        [DLQ],
      );
      expect(viaIndex.rows[0]!.n).toBe(1);
    });

    it('with 50k dead letters of other queues and 20k of its own (after ANALYZE) the count and the list read the dead-letter index', async (ctx) => {
      const { d, names } = await migrated();
      const t = `"${d.schema}"."${TABLE}"`;
      await d.client.query(
        `INSERT INTO ${t} (id, queue, payload_json, headers_json, dead_letter_reason, created_at)
         SELECT gen_random_uuid(), $1, '{}', json_build_object($2::text, CASE WHEN g <= 20000 THEN 'work' ELSE 'other-' || (g % 50) END)::text, 'boom',
                clock_timestamp() - g * interval '1 second' FROM generate_series(1, 70000) AS g`,
        [DLQ, DEAD_LETTER_SOURCE_HEADER],
      );
      await d.client.query(`ANALYZE ${t}`);
      const sql = pgStatements(names);
      const plan = async (text: string, params: unknown[]) => {
        const r = await d.client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${text}`, params);
        return nodes(r.rows[0]!['QUERY PLAN'][0]!.Plan);
      };
      const usesIndex = (ns: PlanNode[]) => ns.some((n) => /Index|Bitmap/.test(n['Node Type']) && n['Index Name'] === names.deadLettersListIndex);
      const stats = await plan(sql.stats, ['work', DLQ]);
      if (fixture.name === 'pglite' && !usesIndex(stats)) {
        console.log(`[pglite] EXPLAIN check skipped: its planner chose ${stats.map((n) => n['Node Type']).join(', ')}`);
        ctx.skip();
      }
      expect(usesIndex(stats)).toBe(true);
      expect(stats.some((n) => n['Node Type'] === 'Seq Scan')).toBe(false);
      // the newest 50 of a source's 20,000 in the index's order: no sort of the source's dead letters
      const list = await plan(sql.listDeadLetters, [DLQ, 'work', 50]);
      expect(usesIndex(list)).toBe(true);
      expect(list.some((n) => n['Node Type'] === 'Sort')).toBe(false);
      // and without the index the same statements scan or sort: the checks can fail
      await d.client.query(`DROP INDEX "${d.schema}"."${names.deadLettersListIndex}"`);
      expect((await plan(sql.stats, ['work', DLQ])).some((n) => n['Node Type'] === 'Seq Scan' || n['Index Name'] !== undefined && n['Index Name'] !== names.deadLettersListIndex)).toBe(true);
      expect((await plan(sql.listDeadLetters, [DLQ, 'work', 50])).some((n) => n['Node Type'] === 'Sort')).toBe(true);
    });

    it('a prune beside 20,000 dead letters that are not old yet reads only the ones it deletes: every source, unparsed headers too', async () => {
      const { d, store, names } = await migrated();
      const t = `"${d.schema}"."${TABLE}"`;
      const insert = (n: number, headers: string, age: string) =>
        d.client.query(
          `INSERT INTO ${t} (id, queue, payload_json, headers_json, dead_letter_reason, created_at)
           SELECT gen_random_uuid(), $1, '{}', ${headers}, 'boom', clock_timestamp() - ${age} FROM generate_series(1, ${n}) AS g`,
          [DLQ, DEAD_LETTER_SOURCE_HEADER],
        );
      const sourced = (source: string) => `json_build_object($2::text, ${source})::text`;
      await insert(20_000, sourced(`CASE WHEN g % 2 = 0 THEN 'work' ELSE 'other-' || (g % 50) END`), `g * interval '1 second'`);
      await insert(3, `'not json: ' || $2::text`, `g * interval '1 second'`); // young, with a header no JSON parse reads
      await insert(30, sourced(`CASE WHEN g % 2 = 0 THEN 'work' ELSE 'other-7' END`), `interval '10 days' + g * interval '1 second'`);
      await insert(5, `'not json: ' || $2::text`, `interval '10 days' + g * interval '1 second'`);
      await d.client.query(`ANALYZE ${t}`);
      const week = 7 * 24 * 3600 * 1000;
      const OLD_PRUNE = `DELETE FROM ${t} WHERE ctid IN (
  SELECT ctid FROM ${t} WHERE queue = $1 AND headers_json LIKE '%${DEAD_LETTER_SOURCE_HEADER}%' AND created_at < clock_timestamp() - $2::bigint * interval '1 millisecond' LIMIT 1000)`;
      // rows each plan's scans returned or removed (EXPLAIN ANALYZE, rolled back)
      const rowsRead = async (text: string) => {
        const scans = nodes(await explainRolledBack(d.client, text, [DLQ, week])).filter((n) => /Scan$/.test(n['Node Type']) && n['Relation Name'] !== undefined);
        return {
          read: scans.reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1) + (n['Rows Removed by Filter'] ?? 0), 0),
          scans: scans.map((n) => n['Node Type']),
        };
      };
      const before = await rowsRead(OLD_PRUNE);
      const after = await rowsRead(pgStatements(names).pruneDeadLetters);
      if (fixture.name === 'pglite' && after.scans.some((s) => s.startsWith('Seq Scan'))) {
        console.log(`[pglite] rows-read check skipped: its planner chose ${after.scans.join(', ')}`);
      } else {
        // the statement before read every young dead letter to find the old ones; this one reads the 35 and one
        // probe per source (51 sources)
        expect(before.read).toBeGreaterThan(20_000);
        expect(after.scans.some((s) => s.startsWith('Seq Scan'))).toBe(false);
        expect(after.read).toBeLessThan(300);
      }
      expect(await store.pruneDeadLetterBatch(DLQ, week)).toBe(35);
      expect(await store.pruneDeadLetterBatch(DLQ, week)).toBe(0);
      const left = await d.client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t} WHERE queue = $1`, [DLQ]);
      expect(left.rows[0]!.n).toBe(20_003);
    });
  });
}
