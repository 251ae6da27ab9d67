// Control over waiting and running jobs, and over queues (issue 16 §4): the port's answer types and the one
// header that marks a running job as cancelled. The statements live per dialect (stores/*/job-control-statements.ts).
//
// A running job's cancel is a marker, not a column (design §2: extra metadata goes into headers_json): the cancel
// statement prefixes the leased row's headers_json with {"AR-Cancel-Requested":"<db time>", … so the renewal can
// test it with a LIKE on the prefix (no JSON parsed per beat) and a re-claim (the owner died) reads it as a header.
// The row keeps its lock_id, so the owner's settlement stays fenced: it deletes the row as cancelled.

export const CANCEL_REQUESTED_HEADER = 'AR-Cancel-Requested';
/** The text every marked row's headers_json starts with (the renewal and the cancel statement test it). */
export const CANCEL_MARK_PREFIX = `{"${CANCEL_REQUESTED_HEADER}":`;

/** true = renewed; false = the lease was lost; 'cancel-requested' = renewed, and the job was asked to cancel. */
export type RenewResult = boolean | 'cancel-requested';

/**
 * deleted: the job was waiting (ready or delayed) and is gone. cancelling: it is running; it was marked and its
 * handler's signal aborts at the next renewal. running: it is running and `running` was not asked. absent: no such
 * job on the queue (never published, already settled, or dead-lettered).
 */
export type CancelOutcome = 'deleted' | 'cancelling' | 'running' | 'absent';

/** A new due time: a delay from the database clock, or an instant (compared with the database clock). */
export type RescheduleTime = { delayMs: number } | { availableAt: Date };

export type RescheduleOutcome = { outcome: 'rescheduled'; availableAt: Date } | { outcome: 'running' } | { outcome: 'absent' };

export interface QueueState {
  queue: string;
  paused: boolean;
  /** When the pause began (database clock); null when not paused. */
  pausedAt: Date | null;
  /** Until when a forward target's Retry-After holds the queue's claims back (database clock); null = not now. */
  backoffUntil?: Date | null;
}

/** Why a job stopped when cancelled while running: the abort reason its handler's signal carries. */
export class JobCancelledError extends Error {
  constructor(readonly jobId: string) {
    super(`job ${jobId} was cancelled`);
    this.name = 'JobCancelledError';
  }
}
