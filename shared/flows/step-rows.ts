// How a ledger is stored so that a checkpoint's bytes stay flat as a run's steps grow (issue 26, item 2): the
// run's leading completed steps live one row per step in the steps table, and the run's row keeps the head, the
// ledger without them. A checkpoint writes the head plus only the steps that completed since the last write.
//
// Why a prefix: the ledger's step order is the order steps were first recorded in (restart and the run view read
// it), so row i holds the i-th step and the head keeps every step from the first one not completed on. A
// sequential flow then keeps at most its current step in the head; a step left waiting keeps later completions in
// the head until it completes (bounded by what runs beside it). Completed steps never change, except that an
// operator's restart removes a suffix of the ledger: the head then names fewer rows, and the rows past that count
// are rewritten when their positions settle again (or removed by the same statement).
//
// The run's row keeps the seed's shape (durable-flows.md §2.2: one row per run, state_json the ledger): a head with
// no rows is the whole ledger at schema version 1, which earlier releases read as before; a head that names rows
// is schema version 2, which they refuse (FlowStateUnreadableError) rather than run its steps again.
// No SQL and no I/O: the two dialect stores send what `ledgerWrite` returns and read back through `ledgerRead`.

import { checkWritableVersion, FLOW_STATE_SCHEMA_VERSION, FlowStateUnreadableError, parseFlowState, type FlowState, type FlowStepState } from './state';

/** The stored head's version when it names step rows. */
export const FLOW_HEAD_WITH_ROWS_VERSION = 2;

export interface StepRow {
  /** 1-based position in the ledger's step order. */
  seq: number;
  name: string;
  /** The step's JSON (nulls omitted), its name in `name`. */
  json: string;
}

export interface LedgerWrite {
  /** The head's JSON: version 1 (no rows) or 2 (rows 1..stepRows hold the leading steps). */
  headJson: string;
  /** The rows this write adds or rewrites, in order: seq runs from `firstSeq`. */
  rows: StepRow[];
  /** How many leading steps the rows hold after this write; rows past it are stale (the write removes them). */
  stepRows: number;
  lastStepRow?: string;
}

const omitNulls = (_k: string, v: unknown) => (v === null ? undefined : v);

/**
 * What a write of `state` stores. `state.stepRows`/`lastStepRow` say what the run's rows held when the state was
 * read: rows past them are written; when that prefix is no longer the ledger's (a restart cut it), every row is.
 * Call `settled` after the write succeeded.
 */
export function ledgerWrite(state: FlowState): LedgerWrite {
  checkWritableVersion(state);
  const names = Object.keys(state.steps);
  let p = 0;
  while (p < names.length && state.steps[names[p]!]!.completed) p++;
  const s0 = state.stepRows ?? 0;
  const intact = s0 === 0 || (s0 <= p && names[s0 - 1] === state.lastStepRow);
  const from = intact ? s0 : 0;
  const rows: StepRow[] = [];
  for (let i = from; i < p; i++) {
    const name = names[i]!;
    rows.push({ seq: i + 1, name, json: JSON.stringify(state.steps[name], omitNulls) });
  }
  const steps: Record<string, FlowStepState> = {};
  for (const name of names.slice(p)) steps[name] = state.steps[name]!;
  const { stepRows: _s, lastStepRow: _l, ...rest } = state;
  const head = p === 0 ? { ...rest, steps } : { ...rest, schemaVersion: FLOW_HEAD_WITH_ROWS_VERSION, steps, stepRows: p, lastStepRow: names[p - 1] };
  return { headJson: JSON.stringify(head, omitNulls), rows, stepRows: p, ...(p > 0 ? { lastStepRow: names[p - 1] } : {}) };
}

/** Records on the written state what its rows now hold (the next write sends only the steps after them). */
export function settled(state: FlowState, write: LedgerWrite): void {
  if (write.stepRows === 0) {
    delete state.stepRows;
    delete state.lastStepRow;
  } else {
    state.stepRows = write.stepRows;
    state.lastStepRow = write.lastStepRow;
  }
}

/** A stored step row as a store reads it back (`revision`: the run's revision that wrote it). */
export interface StoredStepRow {
  seq: number;
  name: string;
  json: string;
  revision: number;
}

/** Thrown for a read whose rows were written after its head (two statements of one read saw different commits): read again. */
export class TornLedgerRead extends Error {
  override name = 'TornLedgerRead';
}

/**
 * The ledger from a stored head and the run's step rows (any order; rows past the head's count are stale and
 * ignored). A head that names rows it cannot find, or rows written after it, throws TornLedgerRead when that can
 * be a read racing a write, FlowStateUnreadableError otherwise.
 */
export function ledgerRead(flowId: string, headJson: string, revision: number, rows: readonly StoredStepRow[]): FlowState {
  const head = parseFlowState(flowId, headJson, revision, FLOW_HEAD_WITH_ROWS_VERSION);
  if ((head.schemaVersion as number) === FLOW_STATE_SCHEMA_VERSION) {
    delete head.stepRows;
    delete head.lastStepRow;
    return head;
  }
  const count = head.stepRows;
  if (!Number.isInteger(count) || (count as number) < 1 || typeof head.lastStepRow !== 'string') {
    throw new FlowStateUnreadableError(flowId, `a version ${FLOW_HEAD_WITH_ROWS_VERSION} head must name its step rows (stepRows ${String(count)})`);
  }
  const bySeq = new Map<number, StoredStepRow>();
  for (const r of rows) if (r.seq <= count!) bySeq.set(r.seq, r);
  const steps: Record<string, FlowStepState> = {};
  for (let seq = 1; seq <= count!; seq++) {
    const r = bySeq.get(seq);
    if (!r || r.revision > revision) throw new TornLedgerRead(`flow run '${flowId}': step row ${seq} ${r ? 'was written after' : 'is missing from'} the head read at revision ${revision}`);
    let step: unknown;
    try {
      step = JSON.parse(r.json);
    } catch (e) {
      throw new FlowStateUnreadableError(flowId, `step row ${seq} holds malformed JSON (${(e as Error).message})`);
    }
    if (typeof step !== 'object' || step === null || Array.isArray(step)) throw new FlowStateUnreadableError(flowId, `step row ${seq} is not an object`);
    steps[r.name] = step as FlowStepState;
  }
  if (!(head.lastStepRow! in steps) || Object.keys(steps)[count! - 1] !== head.lastStepRow) {
    throw new TornLedgerRead(`flow run '${flowId}': step row ${count} is not '${head.lastStepRow}' as the head at revision ${revision} says`);
  }
  for (const [name, step] of Object.entries(head.steps)) steps[name] = step;
  head.steps = steps;
  head.schemaVersion = FLOW_STATE_SCHEMA_VERSION;
  return head;
}

/** A read that may be torn by a concurrent write, tried up to three times (then the ledger is unreadable). */
export async function readUntorn<T>(flowId: string, read: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (err) {
      if (!(err instanceof TornLedgerRead)) throw err;
      if (attempt >= 3) throw new FlowStateUnreadableError(flowId, err.message);
    }
  }
}
