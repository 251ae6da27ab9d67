// BENCH_ONLY=claim-flatness (PostgreSQL server): the claim-flatness matrix (bench/claim-cost.ts) at
// BENCH_FLATNESS_ROWS rows per backlog (default 1,000,000): a claim of 500 over 10 ready rows, its limited twin and
// the outlook, beside the 1,000-row baseline and beside each backlog; each case in a schema of its own.
// test/contract/postgres.claim-flatness.contract.test.ts asserts the same matrix at 100,000 rows.

import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { transportNames } from '../shared/sql/identifiers';
import { historyNames } from '../shared/stores/history-names';
import { DEFAULT_TRANSPORT_TABLE } from '../shared/stores/options';
import { pgClaimOutlookStatement } from '../shared/stores/postgres/outlook-statements';
import { LIMITED_CLAIM_ARGS, pgLimitStatements } from '../shared/stores/postgres/limit-statements';
import { pgStatements } from '../shared/stores/postgres/statements';
import { argTypes, CLAIM_ARGS } from '../shared/stores/postgres/claim-routine';
import { queueStateTableName } from '../shared/stores/queue-state-names';
import { BACKLOG_KINDS, measureClaim, seedBacklog, seedReady, type BacklogKind, type ClaimCost } from './claim-cost';
import { openBenchStores } from './stores';

type Record = (what: string, value: string, note?: string) => void;
const BASELINE = 1_000;

async function measureCase(url: string, kind: BacklogKind | 'baseline', size: number): Promise<{ claim: ClaimCost; limited: ClaimCost; outlook: ClaimCost; rows: number; leases: number }> {
  const schema = `bench_flat_${randomBytes(4).toString('hex')}`;
  const stores = await openBenchStores(schema);
  const sql = new Client({ connectionString: url });
  await sql.connect();
  try {
    await stores.store.ensureSchema();
    const names = transportNames(schema, DEFAULT_TRANSPORT_TABLE, 'postgres');
    const s = { store: stores.store, sql, schema, table: DEFAULT_TRANSPORT_TABLE, historyTable: historyNames(names, 'postgres').table };
    await seedBacklog(s, 'delayed', BASELINE);
    if (kind !== 'baseline') await seedBacklog(s, kind, size);
    await seedReady(s, kind);
    await sql.query(`INSERT INTO "${schema}"."${queueStateTableName(names, 'postgres')}" (queue) VALUES ('work') ON CONFLICT DO NOTHING`);
    const rows = Number((await sql.query<{ n: string }>(`SELECT reltuples::bigint AS n FROM pg_class WHERE oid = '"${schema}"."${DEFAULT_TRANSPORT_TABLE}"'::regclass`)).rows[0]!.n);
    const leases = Number((await sql.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}"."${DEFAULT_TRANSPORT_TABLE}" WHERE queue = 'work' AND lock_id IS NOT NULL AND locked_until > now()`)).rows[0]!.n);
    return {
      rows,
      leases,
      // both as their routines run them (stores/postgres/claim-routine.ts): prepared, under one generic plan
      claim: await measureClaim(sql, pgStatements(names).claim, 15, undefined, argTypes(CLAIM_ARGS)),
      limited: await measureClaim(sql, pgLimitStatements(names).claim, 15, (v) => [...v, 1_000_000, null, 1], argTypes(LIMITED_CLAIM_ARGS)),
      outlook: await measureClaim(sql, pgClaimOutlookStatement(names), 15, (v) => [v[0]]),
    };
  } finally {
    await sql.end();
    await stores.close();
  }
}

export async function benchClaimFlatnessMatrix(record: Record): Promise<void> {
  const url = process.env.PG_URL ?? process.env.DATABASE_URL;
  if (!url || (process.env.BENCH_STORE && process.env.BENCH_STORE !== 'postgres')) {
    console.log('claim-flatness matrix: skipped (it needs the PostgreSQL server: PG_URL)');
    return;
  }
  const size = Number(process.env.BENCH_FLATNESS_ROWS ?? 1_000_000);
  const base = await measureCase(url, 'baseline', BASELINE);
  const padded = await measureCase(url, 'another queue', size);
  const fmtCost = (c: ClaimCost) => `${c.ms.toFixed(3)} ms, ${c.rowsRead} rows read, ${c.readBuffers} buffers read (${c.buffers} in all)`;
  const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
  // time and rows vs the baseline, buffers vs the baseline padded to the backlog's size (an index a level deeper)
  record(`claim of 500, 10 ready + ${BASELINE.toLocaleString('en')} delayed (baseline)`, fmtCost(base.claim), `limited ${fmtCost(base.limited)}; outlook ${fmtCost(base.outlook)}`);
  record(`  + ${size.toLocaleString('en')} ready rows of another queue`, fmtCost(padded.claim), `time ${ratio(padded.claim.ms, base.claim.ms)}, buffers read ${ratio(padded.claim.readBuffers, base.claim.readBuffers)} vs baseline (index depth)`);
  for (const kind of BACKLOG_KINDS) {
    const m = await measureCase(url, kind, size);
    const parts = (['claim', 'limited', 'outlook'] as const).map(
      // a Seq Scan of a table of a few thousand rows (the history case's transport table) is the planner's fair choice
      // a limited claim also counts the live leases (the keyed case's leased heads): rows beyond those are compared
      (p) => `${p} ${ratio(m[p].ms, base[p].ms)} time, ${ratio(m[p].rowsRead - (p === 'limited' ? m.leases : 0), base[p].rowsRead)} rows${p === 'limited' && m.leases ? ` (+${m.leases} live leases counted)` : ''}, ${ratio(m[p].readBuffers, padded[p].readBuffers)} buffers vs padded${m[p].seqScans.length && m.rows > 10_000 ? `, SEQ SCAN ${m[p].seqScans.join(',')}` : ''}`,
    );
    record(`  + ${size.toLocaleString('en')} ${kind}`, fmtCost(m.claim), parts.join('; '));
  }
}
