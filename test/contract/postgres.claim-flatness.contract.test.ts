// The claim reads only what it may claim (issue 25 §1): a claim of n = 500 over 10 ready rows reads as much beside
// 100,000 rows of a backlog as without it, for every kind of backlog a queue builds in normal use, in the claim, the
// limited claim and the outlook (EXPLAIN (ANALYZE, BUFFERS) of the statements, rolled back; bench/claim-cost.ts), the
// two claims also as their routines run them, under one generic plan (stores/postgres/claim-routine.ts):
// - rows read (every scan node's rows and the rows its filters removed) within 1.2× of the 1,000-row baseline;
// - buffers read (the plan's less its writes) within 1.2× of the same baseline padded with as many ready rows of
//   another queue: an index over 100,000 rows is a level deeper than one over 1,000, and every probe of it (the
//   claimed rows' own lookups included) reads one buffer more. That depth comes with the table's size, whatever its
//   rows are; what this test excludes is reading the backlog itself, which an index condition that skips entries
//   inside a scan (the claim before the ready set, beside delayed rows) shows only in buffers.
// `npm run bench` (BENCH_ONLY=claim-flatness) runs the same matrix at 1,000,000 rows with times and buffers.
//
// On the claim before the ready set (bd2f52f) the delayed and mixed-priority backlogs made the claim a Seq Scan of
// the whole table, and the keyed one read every row behind the leased heads.

import { Client } from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { BACKLOG_KINDS, measureClaim, seedBacklog, seedReady, type BacklogKind, type ClaimCost, type Seeding } from '../../bench/claim-cost';
import { historyNames } from '../../shared/stores/history-names';
import { pgStatements } from '../../shared/stores/postgres/statements';
import { argTypes, CLAIM_ARGS } from '../../shared/stores/postgres/claim-routine';
import { LIMITED_CLAIM_ARGS, liveLeases, pgLimitStatements } from '../../shared/stores/postgres/limit-statements';
import { pgClaimOutlookStatement } from '../../shared/stores/postgres/outlook-statements';
import { transportNames } from '../../shared/sql/identifiers';
import { DEFAULT_TRANSPORT_TABLE } from '../../shared/stores/options';
import { queueStateTableName } from '../../shared/stores/queue-state-names';
import { announce } from './fixtures';
import { postgresSchemaDb, type SchemaDb } from './schema-fixtures';
import type { OpenedStores } from '../../shared/stores/open';

const BACKLOG = Number(process.env.FLATNESS_ROWS ?? 100_000);
const BASELINE = 1_000;
const PARTS = ['claim', 'limited', 'routine', 'limitedRoutine', 'outlook'] as const;
const fixture = postgresSchemaDb(4);

interface Measured {
  claim: ClaimCost;
  limited: ClaimCost;
  /** the claim and the limited claim as their routines run them (claim-routine.ts): one generic plan */
  routine: ClaimCost;
  limitedRoutine: ClaimCost;
  outlook: ClaimCost;
  /** the queue's live leases, which a limited claim counts (as many as jobs run: the keyed case's leased heads) */
  leases: number;
  /** what counting those leases alone reads (the limited claim's own count, as a statement of its own) */
  leaseCount: ClaimCost;
}

async function measured(kind: BacklogKind | 'baseline', size = BACKLOG): Promise<Measured> {
  const d: SchemaDb = await fixture.create();
  let stores: OpenedStores | undefined;
  const sql = new Client({ connectionString: process.env.PG_URL });
  try {
    await sql.connect();
    stores = await d.open(true);
    await stores.migrator.apply();
    const names = transportNames(d.schema, DEFAULT_TRANSPORT_TABLE, 'postgres');
    const s: Seeding = { store: stores.transport, sql, schema: d.schema, table: DEFAULT_TRANSPORT_TABLE, historyTable: historyNames(names, 'postgres').table };
    await stores.transport.ensureSchema();
    // every case is the baseline (1,000 delayed rows beside the 10 ready ones) plus its backlog
    await seedBacklog(s, 'delayed', BASELINE);
    if (kind !== 'baseline') await seedBacklog(s, kind, size);
    await seedReady(s, kind);
    const limited = pgLimitStatements(names).claim;
    const leases = Number((await sql.query<{ n: string }>(`SELECT count(*) AS n FROM "${d.schema}"."${DEFAULT_TRANSPORT_TABLE}" WHERE queue = 'work' AND lock_id IS NOT NULL AND locked_until > now()`)).rows[0]!.n);
    await sql.query(`INSERT INTO "${d.schema}"."${queueStateTableName(names, 'postgres')}" (queue) VALUES ('work')`);
    return {
      leases,
      claim: await measureClaim(sql, pgStatements(names).claim),
      // the limited claim's statement, with a limit that leaves room for all (its state row read by the claim)
      limited: await measureClaim(sql, limited, 5, (v) => [...v, 1_000_000, null, 1]),
      routine: await measureClaim(sql, pgStatements(names).claim, 5, undefined, argTypes(CLAIM_ARGS)),
      limitedRoutine: await measureClaim(sql, limited, 5, (v) => [...v, 1_000_000, null, 1], argTypes(LIMITED_CLAIM_ARGS)),
      outlook: await measureClaim(sql, pgClaimOutlookStatement(names), 5, (v) => [v[0]]),
      leaseCount: await measureClaim(sql, `SELECT count(*) FROM (${liveLeases(`"${d.schema}"."${DEFAULT_TRANSPORT_TABLE}"`, '$1')}) AS l`, 5, (v) => [v[0]]),
    };
  } finally {
    await stores?.close();
    await sql.end();
    await d.close();
  }
}

describe.skipIf(!announce(fixture))(`[postgres] claim flatness: ${BACKLOG.toLocaleString('en')} rows of each backlog vs a ${BASELINE.toLocaleString('en')}-row baseline`, { timeout: 600_000 }, () => {
  const results = new Map<string, Measured>();
  const base = () => measured('baseline').then((m) => (results.set('baseline', m), m));
  const padded = () => measured('another queue').then((m) => (results.set('baseline + another queue', m), m));
  let baseline: Promise<Measured> | undefined;
  let paddedBaseline: Promise<Measured> | undefined;
  afterAll(() => {
    const row = (name: string, m: Measured) =>
      `${name.padEnd(18)} ${PARTS.map((p) => `${p} ${String(m[p].rowsRead).padStart(6)} rows ${String(m[p].readBuffers).padStart(6)} buffers read`).join(' | ')}`;
    if (results.size > 0) console.log(['[postgres] claim flatness (rows read by the claim\'s scans)', ...[...results].map(([k, m]) => row(k, m))].join('\n'));
  });

  for (const kind of BACKLOG_KINDS) {
    it(`beside ${BACKLOG.toLocaleString('en')} ${kind} rows a claim of 500 reads no more than without them (×1.2), and no table whole`, async () => {
      const b = await (baseline ??= base());
      const p = await (paddedBaseline ??= padded());
      const m = await measured(kind);
      results.set(kind, m);
      // the claim takes the 10 ready rows either way
      expect(m.claim.rows).toBe(10);
      expect(b.claim.rows).toBe(10);
      expect(m.routine.rows).toBe(10);
      // the routines' plans are generic (the queue a parameter), the statements' own custom
      expect([m.routine.generic, m.limitedRoutine.generic, m.claim.generic]).toEqual([true, true, false]);
      for (const part of PARTS) {
        expect(m[part].seqScans, `${part}: ${m[part].seqScans.join(', ')}`).toEqual([]);
        // a limited claim counts the live leases too: as many rows as jobs run (at most the limit), not the backlog
        const counted = part === 'limited' || part === 'limitedRoutine' ? m.leases : 0;
        expect(m[part].rowsRead - counted, `${part}: ${m[part].rowsRead} rows read (${counted} live leases counted) vs ${b[part].rowsRead} at the baseline`).toBeLessThanOrEqual(Math.ceil(b[part].rowsRead * 1.2));
        // and the pages those leases are on, as many as counting them alone reads
        const countedBuffers = part === 'limited' || part === 'limitedRoutine' ? m.leaseCount.readBuffers : 0;
        expect(m[part].readBuffers - countedBuffers, `${part}: ${m[part].readBuffers} buffers read (${countedBuffers} counting the live leases) vs ${p[part].readBuffers} at the padded baseline`).toBeLessThanOrEqual(Math.ceil(p[part].readBuffers * 1.2));
      }
    });
  }
});
