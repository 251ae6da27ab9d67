import type { DrainReport } from '../../shared/transport/drain-loop';

/** A drain report with every count zero and stoppedBy 'idle' on queue 'worker', overridden by `over`. */
export const drainReport = (over: Partial<DrainReport> = {}): DrainReport => ({
  queue: 'worker',
  claimed: 0,
  completed: 0,
  retried: 0,
  deadLettered: 0,
  released: 0,
  ackFailures: 0,
  claimFailures: 0,
  durationMs: 0,
  stoppedBy: 'idle',
  ...over,
});
