// The durable-flow state store's contract (durable-flows.md §2.1), one implementation per dialect
// (stores/postgres/flow-store.ts serves PostgreSQL and PGlite, stores/sqlserver/flow-store.ts SQL Server).
// Every time is the database's (SYSUTCDATETIME() / clock_timestamp()); TTLs and lease durations travel as
// milliseconds and SQL computes the instants. The flows layer above knows no dialect.

import type { CarriedJob } from './jobs';
import type { FlowState, FlowStatus } from './state';

export interface FlowLease {
  leaseId: string;
  /** As stored: may already be in the past (observe does not judge lapse). */
  expiresAt: Date;
}

/** A lease taken with its state: the ledger (createdAt and updatedAt from the row) and the database's now. */
export interface FlowAcquired {
  state: FlowState;
  now: Date;
}

/** What a lease-fenced checkpoint does to the lease in the same statement. */
export interface FlowCheckpointLease {
  /** Extends the lease to now + extendMs. */
  extendMs?: number;
  /** Releases it (the run's last write of this execution). */
  release?: boolean;
}

export interface FlowSummary {
  flowId: string;
  flowName: string;
  status: FlowStatus;
  createdAt: string;
  updatedAt: string;
  lastMessage?: string;
}

export interface FlowListQuery {
  status?: FlowStatus;
  flowName?: string;
  /** 1..200 */
  limit: number;
  /** Keyset paging: runs updated before this flow id's page end (opaque cursor the previous page returned). */
  cursor?: string;
}

export interface FlowStateStore {
  /**
   * Set when tryCreate and a lease-fenced tryUpdate insert `carry` jobs into the transport's table in the same
   * statement (PostgreSQL and PGlite, opened beside the transport). Absent: the flows layer publishes them itself.
   */
  readonly carriesJobs?: boolean;
  /** I/O-free preflight run before a start job is published: throws FlowStateTooLargeError. */
  validateCreate(state: FlowState): void;
  /**
   * Insert-if-absent (state.revision must be 0). An expired row is replaced in place, its lease cleared.
   * Concurrent creates of one id: exactly one returns true. `carry` (carriesJobs only): inserted only when true.
   */
  tryCreate(state: FlowState, ttlMs: number, carry?: readonly CarriedJob[]): Promise<boolean>;
  /** null only when absent or expired; an untrustworthy row throws FlowStateUnreadableError. */
  load(flowId: string): Promise<FlowState | null>;
  /**
   * Compare-and-swap: requires state.revision === expectedRevision + 1 and a live row at expectedRevision; with
   * leaseId, that lease must be held and unexpired. Stamps expires = now + ttlMs. `carry` (carriesJobs only, with
   * leaseId and lease): inserted only when the update took.
   */
  tryUpdate(state: FlowState, expectedRevision: number, ttlMs: number, leaseId?: string, lease?: FlowCheckpointLease, carry?: readonly CarriedJob[]): Promise<boolean>;
  /**
   * Takes the lease (as tryAcquireLease) and returns the state and the database's now in the same statement: no
   * reload after the lease. With `create` (a start job), the state is first inserted if absent (as tryCreate).
   * null: not taken (another execution holds it, or there is no live run).
   */
  acquire(flowId: string, leaseId: string, durationMs: number, create?: { state: FlowState; ttlMs: number }): Promise<FlowAcquired | null>;
  /** Succeeds if the lease is unheld, expired, or already this one's (then it is extended). */
  tryAcquireLease(flowId: string, leaseId: string, durationMs: number): Promise<boolean>;
  /** Succeeds only for the current owner whose lease is unexpired. */
  tryRenewLease(flowId: string, leaseId: string, durationMs: number): Promise<boolean>;
  /** Clears only this lease; otherwise (or for a missing run) does nothing. */
  releaseLease(flowId: string, leaseId: string): Promise<void>;
  /** The stored owner and expiry, or 'unheld' (unheld or missing run). */
  observeLease(flowId: string): Promise<FlowLease | 'unheld'>;
  tryDelete(flowId: string): Promise<boolean>;
  /** Deletes expired rows in bounded batches (1,000) for at most budgetMs (2,000); returns how many. */
  prune(budgetMs?: number): Promise<number>;
  /** The database clock. */
  now(): Promise<Date>;
  /** Newest first (updated_at desc), through an index. */
  list(query: FlowListQuery): Promise<{ items: FlowSummary[]; cursor?: string }>;
  /** Live (unexpired) runs per status. */
  countByStatus(): Promise<Record<FlowStatus, number>>;
}
