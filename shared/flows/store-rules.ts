// The argument rules and row mapping both dialect flow stores share (stores/postgres/flow-store.ts,
// stores/sqlserver/flow-store.ts): duration clamps, the write preflight, the listing columns taken from the
// ledger, the list cursor, the prune budget. No SQL and no I/O.

import {
  FLOW_STATUSES,
  FlowStateTooLargeError,
  serializeFlowState,
  type FlowState,
  type FlowStatus,
} from './state';
import { ledgerRead, ledgerWrite, type LedgerWrite, type StoredStepRow } from './step-rows';
import type { FlowListQuery } from './store';

/** 3650 days: the longest TTL or lease a store stamps (where SQL Server's ms-split DATEADD stays exact). */
export const MAX_FLOW_DURATION_MS = 3650 * 24 * 60 * 60 * 1000;
/** Ids are at most 400 UTF-16 units (SQL Server nvarchar(400), within the 900-byte key limit). */
export const MAX_FLOW_ID_LENGTH = 400;
export const MAX_FLOW_NAME_LENGTH = 200;
export const MAX_LEASE_ID_LENGTH = 64;
/** The listing copy of the ledger's lastMessage is cut to this many characters (the ledger keeps it whole). */
export const LISTED_MESSAGE_LENGTH = 400;
export const FLOW_PRUNE_BATCH = 1000;
export const FLOW_PRUNE_BUDGET_MS = 2000;
/** tryCreate prunes expired rows at most this often per store instance. */
export const FLOW_PRUNE_INTERVAL_MS = 5 * 60 * 1000;
export const MAX_LIST_LIMIT = 200;

/** A TTL or lease duration as whole milliseconds in [0, 3650 days]; not a number throws. */
export function clampDurationMs(value: number, what: string): number {
  if (typeof value !== 'number' || Number.isNaN(value)) throw new RangeError(`${what} must be a number of milliseconds, not ${String(value)}`);
  return Math.min(MAX_FLOW_DURATION_MS, Math.max(0, Math.ceil(value)));
}

export function checkFlowId(flowId: string): string {
  if (typeof flowId !== 'string' || flowId.length === 0 || flowId.length > MAX_FLOW_ID_LENGTH) {
    throw new RangeError(`a flow id must be 1..${MAX_FLOW_ID_LENGTH} characters long`);
  }
  return flowId;
}

export function checkLeaseId(leaseId: string): string {
  if (typeof leaseId !== 'string' || leaseId.length === 0 || leaseId.length > MAX_LEASE_ID_LENGTH) {
    throw new RangeError(`a lease id must be 1..${MAX_LEASE_ID_LENGTH} characters long`);
  }
  return leaseId;
}

/** The size limit option: undefined (no limit) or a positive whole number of bytes. */
export function checkMaxStateBytes(value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value <= 0) throw new RangeError(`maxStateBytes must be a positive whole number of bytes, not ${value}`);
  return value;
}

/** What a write stores besides the ledger: its JSON and the listing columns read from it. */
export interface FlowRowValues {
  flowId: string;
  flowName: string;
  status: FlowStatus;
  lastMessage: string | null;
  stateJson: string;
}

/**
 * Serializes the ledger (a schema version this release does not write throws RangeError) and checks the size
 * limit (UTF-8 bytes of the JSON) without I/O.
 */
export function flowRowValues(state: FlowState, maxStateBytes: number | undefined): FlowRowValues {
  const columns = listingColumns(state);
  const stateJson = serializeFlowState(state);
  if (maxStateBytes !== undefined) {
    const bytes = Buffer.byteLength(stateJson, 'utf8');
    if (bytes > maxStateBytes) throw new FlowStateTooLargeError(state.flowId, bytes, maxStateBytes);
  }
  return { ...columns, stateJson };
}

/** The id, name, status and listed message a write stores beside the ledger, checked. */
function listingColumns(state: FlowState): Omit<FlowRowValues, 'stateJson'> {
  checkFlowId(state.flowId);
  if (typeof state.flowName !== 'string' || state.flowName.length === 0 || state.flowName.length > MAX_FLOW_NAME_LENGTH) {
    throw new RangeError(`a flow name must be 1..${MAX_FLOW_NAME_LENGTH} characters long`);
  }
  if (!FLOW_STATUSES.includes(state.status)) throw new RangeError(`'${String(state.status)}' is not a flow status`);
  const lastMessage = state.lastMessage === undefined || state.lastMessage === null ? null : state.lastMessage.slice(0, LISTED_MESSAGE_LENGTH);
  return { flowId: state.flowId, flowName: state.flowName, status: state.status, lastMessage };
}

/**
 * What an update stores: the listing columns, the head as stateJson and the step rows to write (step-rows.ts).
 * No size limit (it guards creates only).
 */
export function flowUpdateValues(state: FlowState): FlowRowValues & { write: LedgerWrite } {
  const columns = listingColumns(state);
  const write = ledgerWrite(state); // the head only: the whole ledger is never serialized on this path
  return { ...columns, stateJson: write.headJson, write };
}

export function checkCreateRevision(state: FlowState): void {
  if (state.revision !== 0) throw new RangeError(`a flow run is created at revision 0, not ${state.revision}`);
}

export function checkUpdateRevision(state: FlowState, expectedRevision: number): void {
  if (!Number.isSafeInteger(expectedRevision) || expectedRevision < 0) throw new RangeError(`expected revision ${expectedRevision} is not a revision`);
  if (state.revision !== expectedRevision + 1) {
    throw new RangeError(`an update from revision ${expectedRevision} must carry revision ${expectedRevision + 1}, not ${state.revision}`);
  }
}

/** Where a page ended: the exact updated_at text (the dialect's own) and the flow id. */
export interface ListCursor {
  updatedAt: string;
  flowId: string;
}

export function encodeListCursor(c: ListCursor): string {
  return Buffer.from(JSON.stringify([c.updatedAt, c.flowId]), 'utf8').toString('base64url');
}

export function decodeListCursor(cursor: string): ListCursor {
  const decoded = listCursorOf(cursor);
  if (!decoded) throw new RangeError('the list cursor is not one this store returned');
  return decoded;
}

/** Whether a caller's cursor is one a store could have returned (a tampered one would reach the SQL casts). */
export function isListCursor(cursor: string): boolean {
  return listCursorOf(cursor) !== undefined;
}

/** Both dialects' exact text: PostgreSQL `2026-01-02T03:04:05.123456Z`, SQL Server style 121 `2026-01-02 03:04:05.1234567`. */
const EXACT_INSTANT = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(\.\d{1,7})?Z?$/;

function listCursorOf(cursor: string): ListCursor | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value.length !== 2 || typeof value[0] !== 'string' || typeof value[1] !== 'string') return undefined;
  const [updatedAt, flowId] = value as [string, string];
  const m = EXACT_INSTANT.exec(updatedAt);
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const t = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  // a real calendar instant (no 2026-02-30, no 25:00), in the years both dialects hold
  if (t.getUTCFullYear() !== y || t.getUTCMonth() !== mo - 1 || t.getUTCDate() !== d || t.getUTCHours() !== h || t.getUTCMinutes() !== mi || t.getUTCSeconds() !== s || y < 1) return undefined;
  if (flowId.length === 0 || flowId.length > MAX_FLOW_ID_LENGTH) return undefined;
  return { updatedAt, flowId };
}

export function checkListQuery(query: FlowListQuery): { limit: number; cursor?: ListCursor } {
  if (!Number.isInteger(query.limit) || query.limit < 1 || query.limit > MAX_LIST_LIMIT) {
    throw new RangeError(`limit must be 1..${MAX_LIST_LIMIT}, not ${query.limit}`);
  }
  if (query.status !== undefined && !FLOW_STATUSES.includes(query.status)) throw new RangeError(`'${String(query.status)}' is not a flow status`);
  return { limit: query.limit, cursor: query.cursor === undefined ? undefined : decodeListCursor(query.cursor) };
}

export function emptyStatusCounts(): Record<FlowStatus, number> {
  return { Running: 0, Succeeded: 0, Failed: 0, Suspended: 0 };
}

/** The once-per-interval gate of tryCreate's opportunistic prune. */
export class PruneGate {
  private last = Number.NEGATIVE_INFINITY;
  constructor(
    private readonly intervalMs = FLOW_PRUNE_INTERVAL_MS,
    private readonly clock: () => number = Date.now,
  ) {}

  /** true at most once per interval (the caller then prunes). */
  take(): boolean {
    const now = this.clock();
    if (now - this.last < this.intervalMs) return false;
    this.last = now;
    return true;
  }
}

/**
 * A stored row read back with its step rows: the ledger, with createdAt and updatedAt taken from the row's columns
 * (the database clock). Throws TornLedgerRead for rows that do not match the head (see readUntorn).
 */
export function stateFromRow(flowId: string, stateJson: string, revision: number, createdAt: Date, updatedAt: Date, rows: readonly StoredStepRow[] = []): FlowState {
  const state = ledgerRead(flowId, stateJson, revision, rows);
  state.createdAt = createdAt.toISOString();
  state.updatedAt = updatedAt.toISOString();
  return state;
}
