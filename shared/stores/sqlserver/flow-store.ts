// The SQL Server durable-flow state store (the FlowStateStore contract, flows/store.ts) over the pool the transport
// and the channel share (open.ts). The table comes from schema version 7 (migrations.ts); this store runs the version
// gate, verifies the table (flow-verify.ts) and binds the statements of flow-statements.ts.

import type * as sql from 'mssql';
import { parseFlowState, type FlowState, type FlowStatus } from '../../flows/state';
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
  stateFromRow,
  PruneGate,
  type FlowRowValues,
} from '../../flows/store-rules';
import { readUntorn, settled, type LedgerWrite, type StoredStepRow } from '../../flows/step-rows';
import type { Logger } from '../../log';
import { sqlServerErrorNumbers } from '../../sql/transient';
import type { SchemaNames } from '../schema-names';
import { flowList, flowStatements, type FlowStatements } from './flow-statements';
import { evaluateFlowCatalog, FLOW_VERIFICATION_FIX_HINT, flowAbsentMessage, readFlowCatalog } from './flow-verify';
import type { PoolHolder } from './pool-guard';
import { compareSqlServerGuids, rows, SqlServerStoreBase } from './store-common';
import { markCarried, type CarriedJob } from '../../flows/jobs';

export interface SqlServerFlowStoreOptions {
  names: SchemaNames;
  logger: Logger;
  /** The migrations created the table (AUTO_CREATE_SCHEMA): its indexes must then exist as declared. */
  autoCreateSchema: boolean;
  schemaGate?: () => Promise<void>;
  /** Largest serialized ledger (UTF-8 bytes) validateCreate accepts; default none. */
  maxStateBytes?: number;
  /** Test harness only (see TransportStoreOptions.verifyCatalog). */
  verifyCatalog?: boolean;
  pruneGate?: PruneGate;
  /**
   * The transport's table (names.transport) is in this same database: a create and a checkpoint may carry jobs
   * (flows/store.ts carriesJobs). openSqlServerStores sets it.
   */
  carriesJobs?: boolean;
}

const DUPLICATE_KEY = [2627, 2601];
const DEADLOCK = 1205;
const CREATE_ATTEMPTS = 3;

const affected = (result: sql.IResult<unknown>) => result.rowsAffected.reduce((a, b) => a + b, 0);

/** datetime2 comes back as a Date (UTC, the driver's useUTC default); a string is parsed as UTC. */
function asDate(v: unknown): Date {
  return v instanceof Date ? v : new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(String(v)) ? String(v) : `${String(v)}Z`);
}

/** The step rows a write sends: the rows kept below the first one it writes, and the new ones as a JSON array. */
function stepValues(w: LedgerWrite): { kept_rows: number; step_rows: string } {
  return { kept_rows: w.rows.length > 0 ? w.rows[0]!.seq - 1 : w.stepRows, step_rows: JSON.stringify(w.rows.map((r) => ({ s: r.seq, n: r.name, j: r.json }))) };
}

/** The carried jobs as the carrying statements' @jobs (publishBatch's elements), in key order as a publish sends them. */
function carriedJobsJson(jobs: readonly CarriedJob[]): string {
  return JSON.stringify(
    jobs
      .map((j, ord) => ({ id: j.id, queue: j.queue, payload_json: j.payloadJson, headers_json: j.headersJson, delay_ms: Math.max(0, Math.ceil(j.delayMs)), priority: j.priority, ord }))
      .sort((a, b) => compareSqlServerGuids(a.id, b.id)),
  );
}

/** A load's or an acquire's head row, joined with the second result set's step rows. */
function stateOf(flowId: string, row: Record<string, unknown>, result: sql.IResult<unknown>): FlowState {
  const stepRows: StoredStepRow[] = rows(result, 1).map((r) => ({ seq: Number(r.seq), name: String(r.step_name), json: String(r.step_json), revision: Number(r.revision) }));
  return stateFromRow(flowId, String(row.state_json), Number(row.revision), asDate(row.created_at_utc), asDate(row.updated_at_utc), stepRows);
}

export class SqlServerFlowStore extends SqlServerStoreBase implements FlowStateStore {
  private readonly sql: FlowStatements;
  private readonly options: SqlServerFlowStoreOptions;
  private readonly maxStateBytes: number | undefined;
  private readonly pruneGate: PruneGate;
  readonly carriesJobs: boolean;

  constructor(pool: sql.ConnectionPool | PoolHolder, options: SqlServerFlowStoreOptions) {
    const statements = flowStatements(options.names);
    super(pool, options.logger, false);
    this.sql = statements;
    this.options = options;
    this.carriesJobs = options.carriesJobs === true;
    this.maxStateBytes = checkMaxStateBytes(options.maxStateBytes);
    this.pruneGate = options.pruneGate ?? new PruneGate();
  }

  protected async runSchemaAttempt(): Promise<void> {
    await this.poolHolder.get();
    await this.options.schemaGate?.();
    if (this.options.verifyCatalog === false) {
      this.schemaReady = true;
      return;
    }
    const result = evaluateFlowCatalog(await readFlowCatalog(this.pool, this.options.names), this.options.names, {
      autoCreate: this.options.autoCreateSchema,
    });
    for (const w of result.warnings) this.logger.warn(w);
    if (result.problems.length > 0) throw new Error(`${result.problems.join(' ')} ${FLOW_VERIFICATION_FIX_HINT}`);
    // not latched: the next operation checks again
    if (result.absent) throw new Error(flowAbsentMessage(this.options.names));
    this.schemaReady = true;
  }

  /** The store runs no DDL of its own (the migrations do); a collision shows in verification. */
  protected async collisionProblems(): Promise<string[]> {
    return evaluateFlowCatalog(await readFlowCatalog(this.pool, this.options.names), this.options.names, { autoCreate: false }).problems;
  }

  private row(v: FlowRowValues) {
    return { flow_id: v.flowId, flow_name: v.flowName, status: v.status, last_message: v.lastMessage, state_json: v.stateJson };
  }

  validateCreate(state: FlowState): void {
    checkCreateRevision(state);
    flowRowValues(state, this.maxStateBytes);
  }

  async tryCreate(state: FlowState, ttlMs: number, carry?: readonly CarriedJob[]): Promise<boolean> {
    checkCreateRevision(state);
    const v = flowRowValues(state, this.maxStateBytes);
    const ttl = clampDurationMs(ttlMs, 'the flow state TTL');
    const jobs = carry && carry.length > 0 ? this.carried(carry) : undefined;
    await this.ensureSchema();
    let created = false;
    for (let attempt = 1; ; attempt++) {
      try {
        const result = jobs
          ? await this.run(this.sql.createCarrying, { ...this.row(v), ttl_ms: BigInt(ttl), jobs })
          : await this.run(this.sql.create, { ...this.row(v), ttl_ms: BigInt(ttl) });
        created = Number(rows(result)[0]?.created ?? 0) > 0;
        if (jobs) markCarried(carry!, rows(result, 1).map((r) => String(r.id)));
        break;
      } catch (err) {
        const numbers = sqlServerErrorNumbers(err);
        const duplicate = numbers.some((n) => DUPLICATE_KEY.includes(n));
        // a carried job's id inserted concurrently rolled the whole batch back: run it again (its probe then skips the job)
        if (duplicate && jobs && attempt < CREATE_ATTEMPTS) continue;
        if (duplicate) {
          if (carry) markCarried(carry, []);
          break; // another create of this id won
        }
        // a deadlock victim's transaction was rolled back whole: running it again is safe
        if (!numbers.includes(DEADLOCK) || attempt >= CREATE_ATTEMPTS) throw err;
        this.logger.debug(`flow create of '${v.flowId}' was a deadlock victim; retrying`, err);
      }
    }
    if (this.pruneGate.take()) await this.pruneQuietly();
    return created;
  }

  private async pruneQuietly(): Promise<void> {
    try {
      await this.prune();
    } catch (err) {
      this.logger.debug('flow state prune failed (the next create retries it)', err);
    }
  }

  async load(flowId: string): Promise<FlowState | null> {
    checkFlowId(flowId);
    await this.ensureSchema();
    // the head and the step rows are two statements: a write committed between them tears the read, read again
    return readUntorn(flowId, async () => {
      const result = await this.run(this.sql.load, { flow_id: flowId });
      const row = rows(result)[0];
      return row ? stateOf(flowId, row, result) : null;
    });
  }

  /**
   * One batch takes the lease and returns the state and the database's time; a start job's batch first inserts the
   * state if absent (createAndAcquire). A concurrent create that won (duplicate key) fails that batch before the
   * lease: the lease alone is then taken; a deadlock victim's batch runs again.
   */
  async acquire(flowId: string, leaseId: string, durationMs: number, create?: { state: FlowState; ttlMs: number }): Promise<FlowAcquired | null> {
    const values = { flow_id: checkFlowId(flowId), lease_id: checkLeaseId(leaseId), duration_ms: BigInt(clampDurationMs(durationMs, 'the lease duration')) };
    let createValues: Record<string, unknown> | undefined;
    if (create) {
      checkCreateRevision(create.state);
      if (create.state.flowId !== flowId) throw new RangeError(`the created state names flow id '${create.state.flowId}', not '${flowId}'`);
      createValues = { ...this.row(flowRowValues(create.state, this.maxStateBytes)), ttl_ms: BigInt(clampDurationMs(create.ttlMs, 'the flow state TTL')), ...values };
    }
    await this.ensureSchema();
    // taking one's own lease again is harmless, so a torn read is simply run again
    return readUntorn(flowId, async () => {
      let result: sql.IResult<unknown> | undefined;
      for (let attempt = 1; createValues && !result; attempt++) {
        try {
          result = await this.run(this.sql.createAndAcquire, createValues as Record<keyof typeof this.sql.createAndAcquire.params, unknown>);
        } catch (err) {
          const numbers = sqlServerErrorNumbers(err);
          if (numbers.some((n) => DUPLICATE_KEY.includes(n))) break; // a concurrent create won: the row is there
          // a deadlock victim's batch was rolled back whole: running it again is safe
          if (!numbers.includes(DEADLOCK) || attempt >= CREATE_ATTEMPTS) throw err;
          this.logger.debug(`flow create of '${flowId}' was a deadlock victim; retrying`, err);
        }
      }
      result ??= await this.run(this.sql.acquire, values);
      const row = rows(result)[0];
      return row ? { state: stateOf(flowId, row, result), now: asDate(row.db_now) } : null;
    });
  }

  async tryUpdate(state: FlowState, expectedRevision: number, ttlMs: number, leaseId?: string, lease?: FlowCheckpointLease, carry?: readonly CarriedJob[]): Promise<boolean> {
    checkUpdateRevision(state, expectedRevision);
    if (leaseId !== undefined) checkLeaseId(leaseId);
    const v = flowUpdateValues(state);
    const ttl = clampDurationMs(ttlMs, 'the flow state TTL');
    const values = { ...this.row(v), ...stepValues(v.write), revision: BigInt(state.revision), expected_revision: BigInt(expectedRevision), ttl_ms: BigInt(ttl) };
    const fenced = leaseId !== undefined && lease && (lease.release || lease.extendMs !== undefined);
    const carrying = carry && carry.length > 0;
    if (carrying && !fenced) throw new Error('only a lease-fenced checkpoint carries jobs');
    const jobs = carrying ? this.carried(carry) : undefined;
    await this.ensureSchema();
    let result: sql.IResult<unknown>;
    // with a held lease that it extends or releases, one statement does both (the checkpoint); else the plain CAS
    if (fenced) {
      const checkpoint = {
        ...values,
        lease_id: leaseId,
        extend_ms: lease.extendMs === undefined ? null : BigInt(clampDurationMs(lease.extendMs, 'the lease duration')),
        release: lease.release === true,
      };
      for (let attempt = 1; ; attempt++) {
        try {
          result = jobs ? await this.run(this.sql.checkpointCarrying, { ...checkpoint, jobs }) : await this.run(this.sql.checkpoint, checkpoint);
          break;
        } catch (err) {
          // a carried job's id inserted concurrently rolled the checkpoint back whole: run it again (the job is then skipped)
          if (!jobs || attempt >= CREATE_ATTEMPTS || !sqlServerErrorNumbers(err).some((n) => DUPLICATE_KEY.includes(n))) throw err;
        }
      }
      if (jobs) markCarried(carry!, rows(result, 1).map((r) => String(r.id)));
    } else result = await this.run(this.sql.update, { ...values, lease_id: leaseId ?? null });
    const updated = Number(rows(result)[0]?.updated ?? 0) > 0;
    if (updated) settled(state, v.write);
    return updated;
  }

  /** The carried jobs' @jobs; a store not opened beside the transport refuses them (a caller's bug). */
  private carried(carry: readonly CarriedJob[]): string {
    if (!this.carriesJobs) throw new Error('this flow store does not carry jobs (it was not opened beside the transport)');
    return carriedJobsJson(carry);
  }

  private async leaseWrite(statement: FlowStatements['acquireLease'], flowId: string, leaseId: string, durationMs: number): Promise<boolean> {
    const values = { flow_id: checkFlowId(flowId), lease_id: checkLeaseId(leaseId), duration_ms: BigInt(clampDurationMs(durationMs, 'the lease duration')) };
    await this.ensureSchema();
    return affected(await this.run(statement, values)) > 0;
  }

  tryAcquireLease(flowId: string, leaseId: string, durationMs: number): Promise<boolean> {
    return this.leaseWrite(this.sql.acquireLease, flowId, leaseId, durationMs);
  }

  tryRenewLease(flowId: string, leaseId: string, durationMs: number): Promise<boolean> {
    return this.leaseWrite(this.sql.renewLease, flowId, leaseId, durationMs);
  }

  async releaseLease(flowId: string, leaseId: string): Promise<void> {
    const values = { flow_id: checkFlowId(flowId), lease_id: checkLeaseId(leaseId) };
    await this.ensureSchema();
    await this.run(this.sql.releaseLease, values);
  }

  async observeLease(flowId: string): Promise<FlowLease | 'unheld'> {
    checkFlowId(flowId);
    await this.ensureSchema();
    const row = rows(await this.run(this.sql.observeLease, { flow_id: flowId }))[0];
    if (!row || row.lease_id === null || row.lease_id === undefined || !(row.lease_expires_at_utc instanceof Date)) return 'unheld';
    return { leaseId: String(row.lease_id), expiresAt: row.lease_expires_at_utc };
  }

  async tryDelete(flowId: string): Promise<boolean> {
    checkFlowId(flowId);
    await this.ensureSchema();
    return affected(await this.run(this.sql.delete, { flow_id: flowId })) > 0;
  }

  async prune(budgetMs = FLOW_PRUNE_BUDGET_MS): Promise<number> {
    await this.ensureSchema();
    const deadline = Date.now() + Math.max(0, budgetMs);
    let total = 0;
    for (;;) {
      const n = Number(rows(await this.run(this.sql.pruneBatch, {}))[0]?.deleted ?? 0);
      total += n;
      if (n < FLOW_PRUNE_BATCH || Date.now() >= deadline) return total;
    }
  }

  async now(): Promise<Date> {
    return rows(await this.run(this.sql.now, {}))[0]!.now as Date;
  }

  async list(query: FlowListQuery): Promise<{ items: FlowSummary[]; cursor?: string }> {
    const { limit, cursor } = checkListQuery(query);
    await this.ensureSchema();
    const statement = flowList(this.options.names, { status: query.status, flowName: query.flowName, cursor: cursor !== undefined });
    const found = rows(
      await this.run(statement, {
        limit,
        status: query.status ?? null,
        flow_name: query.flowName ?? null,
        cursor_at: cursor?.updatedAt ?? null,
        cursor_id: cursor?.flowId ?? null,
      }),
    );
    const items = found.map(
      (r): FlowSummary => ({
        flowId: String(r.flow_id),
        flowName: String(r.flow_name),
        status: String(r.status) as FlowStatus,
        createdAt: (r.created_at_utc as Date).toISOString(),
        updatedAt: (r.updated_at_utc as Date).toISOString(),
        ...(r.last_message === null || r.last_message === undefined ? {} : { lastMessage: String(r.last_message) }),
      }),
    );
    const last = found[found.length - 1];
    return found.length === limit && last
      ? { items, cursor: encodeListCursor({ updatedAt: String(last.updated_exact), flowId: String(last.flow_id) }) }
      : { items };
  }

  async countByStatus(): Promise<Record<FlowStatus, number>> {
    await this.ensureSchema();
    const counts = emptyStatusCounts();
    for (const r of rows(await this.run(this.sql.countByStatus, {}))) {
      const status = String(r.status) as FlowStatus;
      if (status in counts) counts[status] = Number(r.n);
    }
    return counts;
  }
}
