// Claims and acks on PostgreSQL commit without waiting for the WAL flush (synchronous_commit = off for their own
// transaction only), unless the store is told to keep them durable (DURABLE_CLAIMS_AND_ACKS).
//
// Why it is safe: losing either one to a server crash loses no job. PostgreSQL replays its log in commit order, so
// after a crash the database is as if the last claims and acks (at most 3 × wal_writer_delay, 600 ms by default) had
// rolled back: their rows are queued or leased again, and run again once claimed (at-least-once, as after a host
// crash between a handler's end and its ack; the handler's own writes and every publish keep waiting for the flush,
// and a flush covers every commit before it). A lost claim's rows are not counted as an attempt; a late ack of them is
// fenced out by its lock id. Every other write (publishes, NAKs, dead letters, cancels, flows, the channel) is durable.
//
// How: the statement sets the GUC itself, local to its transaction (`set_config(…, true)`), in an uncorrelated scalar
// subquery: an InitPlan the planner puts in a One-Time Filter, run once per statement, before the commit reads it. A
// session-wide SET would leak into the next statement on the pooled connection (a publish).

/** The test a claim's or an ack's last WHERE carries: always true, and its transaction commits without the flush. */
export const ASYNC_COMMIT_TEST = "(SELECT set_config('synchronous_commit', 'off', true)) = 'off'";

/** ` AND <test>` (or nothing when the store keeps claims and acks durable), for a WHERE that has conditions. */
export const andAsyncCommit = (on: boolean): string => (on ? ` AND ${ASYNC_COMMIT_TEST}` : '');

/** `\nWHERE <test>` (or nothing), for a final SELECT without a WHERE. */
export const whereAsyncCommit = (on: boolean): string => (on ? `\nWHERE ${ASYNC_COMMIT_TEST}` : '');
