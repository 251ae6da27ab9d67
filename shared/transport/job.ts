import type { Logger } from '../log';
import type { TraceContext } from '../tracing/trace-context';
import type { Headers } from './types';

/** What a handler sees of one claimed message. */
export interface Job {
  id: string;
  queue: string;
  /** The payload parsed, for reading fields. Numbers beyond a double's range or precision are rounded here. */
  payload: unknown;
  /** The payload exactly as stored (the publisher's JSON text): what a handler sends on or returns as RawJson. */
  payloadJson: string;
  headers: Headers;
  /** 1 on the first delivery. */
  attempt: number;
  correlationId?: string;
  createdAt: Date;
}

export interface JobContext {
  /** Aborted when the lease is lost to another consumer (the result would be discarded). */
  signal: AbortSignal;
  log: Logger;
  /**
   * The trace context the job's onward work hangs under (its span's when a tracer provider records, else the one
   * stored at publish); undefined when the job was published without one. docs/tracing.md.
   */
  trace?: TraceContext;
  /**
   * epoch ms: when the drain running this job stops claiming (its time budget, as a Function invocation has one);
   * undefined for a worker with no budget. Work that may stop early and resume later (a flow waiting in process)
   * ends by then, so it never holds the invocation past its budget.
   */
  budgetEndsAt?: number;
}

/**
 * Resolves with the job's result (success) or throws (failure → NAK with backoff, or dead letter). A RawJson
 * result becomes the response as its text (e.g. `new RawJson(job.payloadJson)` answers with the payload as sent).
 */
export type JobHandler = (job: Job, ctx: JobContext) => Promise<unknown>;

/**
 * Thrown by a handler for a job that can never succeed (e.g. a response without a usable correlation id):
 * it is dead-lettered at once instead of being retried up to MAX_DELIVERY_ATTEMPTS.
 */
export class PermanentJobError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PermanentJobError';
  }
}

/**
 * Thrown by a handler whose downstream asked it to back off (the forward handler: a 429 or 503 with Retry-After).
 * The job is released (NAK) with that delay instead of the redelivery backoff, its queue's claims are held back on
 * every instance for as long (backOffQueue), and the attempt it used is the only one spent. On the job's last
 * allowed attempt it is dead-lettered like any failure (a target that never recovers must not hold a job forever).
 */
export class BackOffError extends Error {
  constructor(
    message: string,
    readonly delayMs: number,
  ) {
    super(message);
    this.name = 'BackOffError';
  }
}
