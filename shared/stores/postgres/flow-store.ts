// The durable-flow state store on PostgreSQL and PGlite (the FlowStateStore contract, flows/store.ts). The table
// comes from the schema versions (version 5, migrations.ts); this store runs the version gate, verifies the
// table once (flow-verify.ts) and binds the statements of flow-statements.ts.

import { createHash } from 'node:crypto';
import { markCarried, type CarriedJob } from '../../flows/jobs';
import type { FlowState, FlowStatus } from '../../flows/state';
import type { FlowAcquired, FlowCheckpointLease, FlowLease, FlowListQuery, FlowStateStore, FlowSummary } from '../../flows/store';
import {
  checkCreateRevision,
  checkFlowId,
  checkLeaseId,
  checkListQuery,
  checkMaxStateBytes,
  checkUpdateRevision,
  clampDurationMs,
  emptyStatusCounts,
  encodeListCursor,
  FLOW_PRUNE_BATCH,
  FLOW_PRUNE_BUDGET_MS,
  flowRowValues,
  flowUpdateValues,
  PruneGate,
  stateFromRow,
} from '../../flows/store-rules';
import { readUntorn, settled, type StoredStepRow } from '../../flows/step-rows';
import type { Logger } from '../../log';
import type { SchemaNames } from '../schema-names';
import { carriedJobValues } from './carried-jobs';
import type { PgClient } from './client';
import { flowListStatement, flowStatements, flowStateTable, type FlowStatements } from './flow-statements';
import { evaluateFlowTable, readFlowTableCatalog } from './flow-verify';

/** A carrying write's answer (flow-statements.ts CARRIED_SELECT). */
interface CarriedRow {
  n: number;
  inserted_ids: string[] | null;
}

export interface PostgresFlowStoreOptions {
  names: SchemaNames;
  logger: Logger;
  /** The schema-version check run before the table is verified (openStores wires it; it creates the table under AUTO_CREATE_SCHEMA). */
  schemaGate?: () => Promise<void>;
  /** Largest serialized ledger (UTF-8 bytes) validateCreate accepts; default none. */
  maxStateBytes?: number;
  /** Test seam: the opportunistic prune's interval clock. */
  pruneGate?: PruneGate;
  /**
   * The transport's table (names.transport) is on this same client and schema: a create and a checkpoint may carry
   * jobs into it (carried-jobs.ts). openPostgresStoresOn sets it.
   */
  carriesJobs?: boolean;
}

interface StateRow {
  state_json: string;
  revision: string;
  created_at_utc: Date;
  updated_at_utc: Date;
  db_now: Date;
  /** The run's step rows as parallel arrays in seq order (NULL: none). */
  seqs: number[] | null;
  names: string[] | null;
  jsons: string[] | null;
  revs: string[] | null;
}

function stepRowsOf(row: StateRow): StoredStepRow[] {
  const seqs = row.seqs ?? [];
  return seqs.map((seq, i) => ({ seq: Number(seq), name: row.names![i]!, json: row.jsons![i]!, revision: Number(row.revs![i]) }));
}

const stateOf = (flowId: string, row: StateRow) =>
  stateFromRow(flowId, row.state_json, Number(row.revision), row.created_at_utc, row.updated_at_utc, stepRowsOf(row));

interface SummaryRow {
  flow_id: string;
  flow_name: string;
  status: FlowStatus;
  last_message: string | null;
  created_at_utc: Date;
  updated_at_utc: Date;
  updated_exact: string;
}

export class PostgresFlowStore implements FlowStateStore {
  private readonly sql: FlowStatements;
  private readonly prepared: Map<string, string>;
  private readonly maxStateBytes: number | undefined;
  private readonly pruneGate: PruneGate;
  private ready = false;
  private attempt?: Promise<void>;
  readonly carriesJobs: boolean;

  constructor(
    private readonly client: PgClient,
    private readonly options: PostgresFlowStoreOptions,
  ) {
    this.sql = flowStatements(options.names);
    this.carriesJobs = options.carriesJobs === true;
    const hot = [this.sql.load, this.sql.acquire, this.sql.createAndAcquire, this.sql.update, this.sql.checkpoint, this.sql.create, this.sql.createCarrying, this.sql.checkpointCarrying];
    this.prepared = new Map(hot.map((text) => [text, `arf_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`]));
    this.maxStateBytes = checkMaxStateBytes(options.maxStateBytes);
    this.pruneGate = options.pruneGate ?? new PruneGate();
  }

  ensureSchema(): Promise<void> {
    if (this.ready) return Promise.resolve();
    this.attempt ??= this.verify().finally(() => (this.attempt = undefined));
    return this.attempt;
  }

  private async verify(): Promise<void> {
    await this.options.schemaGate?.();
    const result = evaluateFlowTable(await readFlowTableCatalog(this.client, this.options.names), this.options.names);
    for (const w of result.warnings) this.options.logger.warn(w);
    if (result.absent) {
      // not latched: the next operation checks again (an operator may be applying the schema right now)
      throw new Error(
        `the flow state table ${flowStateTable(this.options.names)} does not exist; run \`npm run schema -- apply\` (or \`npm run schema -- print --dialect postgres\`), or set AUTO_CREATE_SCHEMA=true.`,
      );
    }
    if (result.problems.length > 0) {
      throw new Error(
        `the flow state table is not usable:\n- ${result.problems.join('\n- ')}\n` +
          'Fix it to match `npm run schema -- print --dialect postgres`, or give the flow state its own table.',
      );
    }
    this.ready = true;
  }

  private async run<R>(text: string, values: unknown[]) {
    await this.ensureSchema();
    // the hot statements are prepared on each pooled session: parsed and planned once, not at every checkpoint
    return this.client.query<R>(text, values, this.prepared.get(text));
  }

  validateCreate(state: FlowState): void {
    checkCreateRevision(state);
    flowRowValues(state, this.maxStateBytes);
  }

  async tryCreate(state: FlowState, ttlMs: number, carry?: readonly CarriedJob[]): Promise<boolean> {
    checkCreateRevision(state);
    const v = flowRowValues(state, this.maxStateBytes);
    const ttl = clampDurationMs(ttlMs, 'the flow state TTL');
    const values = [v.flowId, v.flowName, v.status, v.lastMessage, v.stateJson, ttl];
    let created: boolean;
    if (carry && carry.length > 0) {
      const jobs = this.carried(carry);
      const row = (await this.run<CarriedRow>(this.sql.createCarrying, [...values, ...jobs])).rows[0]!;
      markCarried(carry, row.inserted_ids);
      created = row.n > 0;
    } else {
      created = (await this.run(this.sql.create, values)).rowCount > 0;
    }
    if (this.pruneGate.take()) await this.pruneQuietly();
    return created;
  }

  /** The carried jobs' parameters; a store not opened beside the transport refuses them (a caller's bug). */
  private carried(carry: readonly CarriedJob[]): unknown[] {
    if (!this.carriesJobs) throw new Error('this flow store does not carry jobs (it was not opened beside the transport)');
    return carriedJobValues(this.options.names.transport, carry);
  }

  private async pruneQuietly(): Promise<void> {
    try {
      await this.prune();
    } catch (err) {
      this.options.logger.debug('flow state prune failed (the next create retries it)', err);
    }
  }

  async load(flowId: string): Promise<FlowState | null> {
    checkFlowId(flowId);
    return readUntorn(flowId, async () => {
      const row = (await this.run<StateRow>(this.sql.load, [flowId])).rows[0];
      return row ? stateOf(flowId, row) : null;
    });
  }

  async acquire(flowId: string, leaseId: string, durationMs: number, create?: { state: FlowState; ttlMs: number }): Promise<FlowAcquired | null> {
    checkFlowId(flowId);
    checkLeaseId(leaseId);
    const duration = clampDurationMs(durationMs, 'the lease duration');
    let text = this.sql.acquire;
    let values: unknown[] = [flowId, leaseId, duration];
    if (create) {
      checkCreateRevision(create.state);
      if (create.state.flowId !== flowId) throw new RangeError(`the created state names flow id '${create.state.flowId}', not '${flowId}'`);
      const v = flowRowValues(create.state, this.maxStateBytes);
      const ttl = clampDurationMs(create.ttlMs, 'the flow state TTL');
      text = this.sql.createAndAcquire;
      values = [v.flowId, v.flowName, v.status, v.lastMessage, v.stateJson, ttl, leaseId, duration];
    }
    // taking one's own lease again is harmless, so a read torn by a concurrent write is simply run again
    return readUntorn(flowId, async () => {
      const row = (await this.run<StateRow>(text, values)).rows[0];
      return row ? { state: stateOf(flowId, row), now: row.db_now } : null;
    });
  }

  async tryUpdate(state: FlowState, expectedRevision: number, ttlMs: number, leaseId?: string, lease?: FlowCheckpointLease, carry?: readonly CarriedJob[]): Promise<boolean> {
    checkUpdateRevision(state, expectedRevision);
    if (leaseId !== undefined) checkLeaseId(leaseId);
    const v = flowUpdateValues(state);
    const ttl = clampDurationMs(ttlMs, 'the flow state TTL');
    const values: unknown[] = [v.flowId, v.flowName, v.status, v.lastMessage, v.stateJson, state.revision, ttl, expectedRevision, leaseId ?? null];
    const w = v.write;
    const steps = [w.stepRows, w.rows.map((r) => r.seq), w.rows.map((r) => r.name), w.rows.map((r) => r.json)];
    let updated: boolean;
    if (leaseId !== undefined && lease && (lease.release || lease.extendMs !== undefined)) {
      const extend = lease.extendMs === undefined ? null : clampDurationMs(lease.extendMs, 'the lease duration');
      const checkpoint = [...values, extend, lease.release === true, ...steps];
      if (carry && carry.length > 0) {
        const row = (await this.run<CarriedRow>(this.sql.checkpointCarrying, [...checkpoint, ...this.carried(carry)])).rows[0]!;
        markCarried(carry, row.inserted_ids);
        updated = row.n > 0;
      } else updated = (await this.run<{ n: number }>(this.sql.checkpoint, checkpoint)).rows[0]!.n > 0;
    } else {
      if (carry && carry.length > 0) throw new Error('only a lease-fenced checkpoint carries jobs');
      updated = (await this.run<{ n: number }>(this.sql.update, [...values, ...steps])).rows[0]!.n > 0;
    }
    if (updated) settled(state, w);
    return updated;
  }

  async tryAcquireLease(flowId: string, leaseId: string, durationMs: number): Promise<boolean> {
    const args = [checkFlowId(flowId), checkLeaseId(leaseId), clampDurationMs(durationMs, 'the lease duration')];
    return (await this.run(this.sql.acquireLease, args)).rowCount > 0;
  }

  async tryRenewLease(flowId: string, leaseId: string, durationMs: number): Promise<boolean> {
    const args = [checkFlowId(flowId), checkLeaseId(leaseId), clampDurationMs(durationMs, 'the lease duration')];
    return (await this.run(this.sql.renewLease, args)).rowCount > 0;
  }

  async releaseLease(flowId: string, leaseId: string): Promise<void> {
    await this.run(this.sql.releaseLease, [checkFlowId(flowId), checkLeaseId(leaseId)]);
  }

  async observeLease(flowId: string): Promise<FlowLease | 'unheld'> {
    const r = await this.run<{ lease_id: string | null; lease_expires_at_utc: Date | null }>(this.sql.observeLease, [checkFlowId(flowId)]);
    const row = r.rows[0];
    if (!row || row.lease_id === null || row.lease_expires_at_utc === null) return 'unheld';
    return { leaseId: row.lease_id, expiresAt: row.lease_expires_at_utc };
  }

  async tryDelete(flowId: string): Promise<boolean> {
    return (await this.run(this.sql.delete, [checkFlowId(flowId)])).rowCount > 0;
  }

  async prune(budgetMs = FLOW_PRUNE_BUDGET_MS): Promise<number> {
    const deadline = Date.now() + Math.max(0, budgetMs);
    let total = 0;
    for (;;) {
      const n = (await this.run(this.sql.pruneBatch, [])).rowCount;
      total += n;
      if (n < FLOW_PRUNE_BATCH || Date.now() >= deadline) return total;
    }
  }

  async now(): Promise<Date> {
    return (await this.client.query<{ now: Date }>(this.sql.now)).rows[0]!.now;
  }

  async list(query: FlowListQuery): Promise<{ items: FlowSummary[]; cursor?: string }> {
    const { limit, cursor } = checkListQuery(query);
    const values: unknown[] = [limit];
    if (query.status !== undefined) values.push(query.status);
    if (query.flowName !== undefined) values.push(query.flowName);
    if (cursor) values.push(cursor.updatedAt, cursor.flowId);
    const text = flowListStatement(this.options.names, { status: query.status, flowName: query.flowName, cursor: cursor !== undefined });
    const rows = (await this.run<SummaryRow>(text, values)).rows;
    const items = rows.map(
      (r): FlowSummary => ({
        flowId: r.flow_id,
        flowName: r.flow_name,
        status: r.status,
        createdAt: r.created_at_utc.toISOString(),
        updatedAt: r.updated_at_utc.toISOString(),
        ...(r.last_message === null ? {} : { lastMessage: r.last_message }),
      }),
    );
    const last = rows[rows.length - 1];
    return rows.length === limit && last ? { items, cursor: encodeListCursor({ updatedAt: last.updated_exact, flowId: last.flow_id }) } : { items };
  }

  async countByStatus(): Promise<Record<FlowStatus, number>> {
    const counts = emptyStatusCounts();
    for (const r of (await this.run<{ status: FlowStatus; n: number }>(this.sql.countByStatus, [])).rows) {
      if (r.status in counts) counts[r.status] = Number(r.n);
    }
    return counts;
  }
}
