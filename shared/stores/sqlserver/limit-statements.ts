// The T-SQL statements of queue limits (issue 17 §2): the limited claim, the forward backoff and the limited
// outlook. PostgreSQL twins: stores/postgres/limit-statements.ts; the arithmetic is transport/limits.ts's.
//
// The limited claim is one batch and one short transaction (XACT_ABORT ON: any error, and a client's attention on a
// timeout, roll it back): the queue's queue-state row is read WITH (UPDLOCK, HOLDLOCK) first, so claimers of one
// limited queue run one after another (a missing row is inserted under the key-range lock HOLDLOCK took); then the
// leased rows are counted (claimed rows count as running), the token bucket is refilled on the database clock, at
// most the room is claimed with the claim of today (UPDLOCK, ROWLOCK, READPAST) and the tokens are spent. Each
// statement after the lock reads what the previous holder committed (READ COMMITTED, with or without RCSI: a new
// statement reads the latest committed versions).
//
// Leases are counted from the lease roster ({table}_leases, schema version 17), as on PostgreSQL: the claim's OUTPUT
// enrols each row it leases as (queue, id, lock_id); entries whose row no longer holds that lease (settled, handed
// back, re-claimed, lapsed) are deleted first, and the rest are counted. Counting the transport table's leased rows
// read the queue's whole ready backlog on every claim.

import * as sql from 'mssql';
import type { TransportNames } from '../../sql/identifiers';
import { qualifiedLeaseRoster, qualifiedQueueStateTable } from './queue-state-sql';
import { claimLines, exactQueueMatch, qualifiedTable, dbClockPlus, type Statement } from './statements';
import { headOfKeyLines } from './ordering-sql';

const types = {
  queue: () => sql.NVarChar(200),
  count: () => sql.Int(),
  ms: () => sql.BigInt(),
  id: () => sql.UniqueIdentifier(),
  rate: () => sql.Float(),
};

const leasedWhere = (names: TransportNames) =>
  `FROM ${qualifiedTable(names)} WHERE ${exactQueueMatch('queue', 'queue')} AND available_at <= SYSUTCDATETIME() AND locked_until > SYSUTCDATETIME()`;

/** The roster's entries of @queue whose row still holds that lease (a primary-key probe per entry). */
const liveLeases = (names: TransportNames) =>
  `FROM ${qualifiedLeaseRoster(names)} AS lease INNER JOIN ${qualifiedTable(names)} AS m ON m.id = lease.id AND m.lock_id = lease.lock_id AND m.locked_until > SYSUTCDATETIME() WHERE ${exactQueueMatch('lease.queue', 'queue')}`;

/** Token arithmetic shared by the claim and the outlook: the bucket now (NULL tokens = a bucket never used = full). */
const refilled = (tokens: string, refilledAt: string) =>
  `CASE WHEN ${tokens} IS NULL OR ${refilledAt} IS NULL THEN @burst ` +
  `WHEN ${tokens} + DATEDIFF_BIG(MICROSECOND, ${refilledAt}, SYSUTCDATETIME()) * @rate / 1000000.0 > @burst THEN @burst ` +
  `ELSE ${tokens} + DATEDIFF_BIG(MICROSECOND, ${refilledAt}, SYSUTCDATETIME()) * @rate / 1000000.0 END`;

/**
 * @n rows at most, @concurrency (NULL = none), @rate per second (NULL = none), @burst the bucket size. First result
 * set: the claimed rows, as the claim's OUTPUT; second: one summary row (held, backoff_ms, tokens_left, leased,
 * lease_lapses_in_ms), read by stores/limited-claim.ts.
 */
export function claimLimited(names: TransportNames): Statement<'n' | 'queue' | 'lock_timeout_ms' | 'lock_id' | 'concurrency' | 'rate' | 'burst'> {
  const s = qualifiedQueueStateTable(names);
  const roster = qualifiedLeaseRoster(names);
  const match = exactQueueMatch('queue', 'queue');
  return {
    text: [
      'SET XACT_ABORT ON;',
      'SET NOCOUNT ON;',
      'DECLARE @held bit = 0, @backoff_ms bigint, @tokens float, @refilled_at datetime2, @leased int = 0, @room int, @claimed int, @lapse_ms bigint;',
      'DECLARE @enrolled TABLE (id uniqueidentifier NOT NULL PRIMARY KEY);',
      'BEGIN TRANSACTION;',
      'SELECT @held = CASE WHEN paused_at IS NOT NULL OR backoff_until > SYSUTCDATETIME() THEN 1 ELSE 0 END,',
      '       @backoff_ms = CASE WHEN backoff_until > SYSUTCDATETIME() THEN DATEDIFF_BIG(MILLISECOND, SYSUTCDATETIME(), backoff_until) END,',
      '       @tokens = rate_tokens, @refilled_at = rate_refilled_at',
      `FROM ${s} WITH (UPDLOCK, HOLDLOCK) WHERE ${match};`,
      'IF @@ROWCOUNT = 0',
      `    INSERT INTO ${s} (queue) VALUES (@queue);`,
      'IF @concurrency IS NOT NULL',
      'BEGIN',
      `    DELETE lease FROM ${roster} AS lease WHERE ${exactQueueMatch('lease.queue', 'queue')}`,
      `        AND NOT EXISTS (SELECT 1 FROM ${qualifiedTable(names)} AS m WHERE m.id = lease.id AND m.lock_id = lease.lock_id AND m.locked_until > SYSUTCDATETIME());`,
      `    SELECT @leased = COUNT(*) FROM ${roster} AS lease WHERE ${exactQueueMatch('lease.queue', 'queue')};`,
      'END',
      `IF @rate IS NOT NULL SET @tokens = ${refilled('@tokens', '@refilled_at')};`,
      'SET @room = CASE WHEN @held = 1 THEN 0 ELSE @n END;',
      'IF @concurrency IS NOT NULL AND @concurrency - @leased < @room SET @room = @concurrency - @leased;',
      'IF @rate IS NOT NULL AND FLOOR(@tokens) < @room SET @room = FLOOR(@tokens);',
      'IF @room < 0 SET @room = 0;',
      ...claimLines(names, '@room', [], '@enrolled'),
      'SET @claimed = @@ROWCOUNT;',
      'IF @concurrency IS NOT NULL',
      `    INSERT INTO ${roster} (queue, id, lock_id) SELECT @queue, id, @lock_id FROM @enrolled;`,
      'IF @rate IS NOT NULL',
      `    UPDATE ${s} SET rate_tokens = @tokens - @claimed, rate_refilled_at = SYSUTCDATETIME() WHERE ${match};`,
      'IF @concurrency IS NOT NULL AND @leased >= @concurrency',
      `    SELECT @lapse_ms = DATEDIFF_BIG(MILLISECOND, SYSUTCDATETIME(), MIN(m.locked_until)) ${liveLeases(names)};`,
      'COMMIT;',
      'SELECT @held AS held, @backoff_ms AS backoff_ms, CASE WHEN @rate IS NULL THEN NULL ELSE @tokens - @claimed END AS tokens_left,',
      '       @leased AS leased, @lapse_ms AS lease_lapses_in_ms;',
    ].join('\n'),
    params: {
      n: types.count(),
      queue: types.queue(),
      lock_timeout_ms: types.ms(),
      lock_id: types.id(),
      concurrency: types.count(),
      rate: types.rate(),
      burst: types.rate(),
    },
  };
}

/** backoff_until = the later of the stored one and now + @ms, as an upsert. PostgreSQL: ON CONFLICT … GREATEST. */
export function backOffQueue(names: TransportNames): Statement<'queue' | 'ms'> {
  const until = dbClockPlus('@ms');
  return {
    text: [
      `MERGE ${qualifiedQueueStateTable(names)} WITH (HOLDLOCK) AS target`,
      'USING (SELECT @queue AS queue) AS src',
      `    ON target.queue = src.queue AND ${exactQueueMatch('target.queue', 'queue')}`,
      'WHEN MATCHED THEN UPDATE SET',
      `    backoff_until = CASE WHEN target.backoff_until > ${until} THEN target.backoff_until ELSE ${until} END,`,
      '    updated_at = SYSUTCDATETIME()',
      'WHEN NOT MATCHED THEN INSERT (queue, backoff_until, updated_at)',
      `    VALUES (@queue, ${until}, SYSUTCDATETIME())`,
      'OUTPUT inserted.backoff_until;',
    ].join('\n'),
    params: { queue: types.queue(), ms: types.ms() },
  };
}

/** A limited queue's outlook facts (stores/limited-claim.ts limitedOutlookOf): one SELECT, no locks taken. */
export function limitedOutlook(names: TransportNames): Statement<'queue' | 'concurrency' | 'rate' | 'burst'> {
  const t = qualifiedTable(names);
  const s = qualifiedQueueStateTable(names);
  const match = exactQueueMatch('queue', 'queue');
  return {
    text: [
      `SELECT CAST(CASE WHEN EXISTS (SELECT 1 FROM ${t} AS candidate WHERE ${match} AND available_at <= SYSUTCDATETIME() AND (locked_until IS NULL OR locked_until <= SYSUTCDATETIME())`,
      ...headOfKeyLines(t),
      '    ) THEN 1 ELSE 0 END AS bit) AS ready,',
      `    CAST(CASE WHEN EXISTS (SELECT 1 FROM ${s} WHERE ${match} AND paused_at IS NOT NULL) THEN 1 ELSE 0 END AS bit) AS paused,`,
      `    (SELECT DATEDIFF_BIG(MILLISECOND, SYSUTCDATETIME(), backoff_until) FROM ${s} WHERE ${match} AND backoff_until > SYSUTCDATETIME()) AS backoff_ms,`,
      `    CASE WHEN @rate IS NULL THEN NULL ELSE (SELECT ${refilled('rate_tokens', 'rate_refilled_at')} FROM ${s} WHERE ${match}) END AS tokens,`,
      `    CASE WHEN @concurrency IS NULL THEN 0 ELSE (SELECT COUNT(*) ${liveLeases(names)}) END AS leased,`,
      // the earliest lapse that would make room: of the roster's leases under a concurrency limit, else of any
      // leased row of the queue (a lapse makes that row claimable again)
      `    CASE WHEN @concurrency IS NOT NULL THEN (SELECT DATEDIFF_BIG(MILLISECOND, SYSUTCDATETIME(), MIN(m.locked_until)) ${liveLeases(names)})`,
      `         ELSE (SELECT DATEDIFF_BIG(MILLISECOND, SYSUTCDATETIME(), MIN(locked_until)) ${leasedWhere(names)}) END AS lease_lapses_in_ms;`,
    ].join('\n'),
    params: { queue: types.queue(), concurrency: types.count(), rate: types.rate(), burst: types.rate() },
  };
}
