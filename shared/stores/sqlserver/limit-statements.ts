// The T-SQL statements of queue limits (issue 17 §2): the limited claim, the forward backoff and the limited
// outlook. PostgreSQL twins: stores/postgres/limit-statements.ts; the arithmetic is transport/limits.ts's.
//
// The limited claim is one batch and one short transaction (XACT_ABORT ON: any error, and a client's attention on a
// timeout, roll it back): the queue's queue-state row is read WITH (UPDLOCK, HOLDLOCK) first, so claimers of one
// limited queue run one after another (a missing row is inserted under the key-range lock HOLDLOCK took); then the
// leased rows are counted (claimed rows count as running), the token bucket is refilled on the database clock, at
// most the room is claimed with the unlimited claim's statements (ready-set.ts: the vacant keys' successors, the due
// rows, the lapsed leases, then the ready-set seek under UPDLOCK, ROWLOCK, READPAST) and the tokens are spent. Each
// statement after the lock reads what the previous holder committed (READ COMMITTED, with or without RCSI: a new
// statement reads the latest committed versions).
//
// The leases are the queue's live leases in the leased index (the ready set, schema version 27: (queue, locked_until)
// INCLUDE (lock_id) WHERE lock_id IS NOT NULL), as on PostgreSQL: one range of as many entries as jobs run, whatever
// the backlog. Before the ready set no index found leased rows, and the lease roster ({table}_leases, version 17)
// that limited claims enrolled into stood in for one; it is no longer written. A lease counts while it is live
// (locked_until ahead): a lapsed one does not, and its owner cannot renew it (statements.ts renewLease), so a slot
// given away on a lapse stays given (review M2). Every instance's leases count, limited or not.

import * as sql from 'mssql';
import type { TransportNames } from '../../sql/identifiers';
import { qualifiedQueueStateTable } from './queue-state-sql';
import { exactQueueMatch, qualifiedTable, dbClockPlus, type Statement } from './statements';
import { claimableExists, claimLines, LEASED_FILTER, leaseLapsesInMs, promoteLines, VACANT_KEYS_DECLARATION } from './ready-set';

const types = {
  queue: () => sql.NVarChar(200),
  count: () => sql.Int(),
  ms: () => sql.BigInt(),
  id: () => sql.UniqueIdentifier(),
  rate: () => sql.Float(),
};

/** The live leases of @queue: the leased index's range (queue, locked_until > now), as many entries as jobs run. */
const liveLeases = (names: TransportNames) =>
  `FROM ${qualifiedTable(names)} WHERE ${exactQueueMatch('queue', 'queue')} AND ${LEASED_FILTER} AND locked_until > SYSUTCDATETIME()`;

/** Token arithmetic shared by the claim and the outlook: the bucket now (NULL tokens = a bucket never used = full). */
const refilled = (tokens: string, refilledAt: string) =>
  `CASE WHEN ${tokens} IS NULL OR ${refilledAt} IS NULL THEN @burst ` +
  `WHEN ${tokens} + DATEDIFF_BIG(MICROSECOND, ${refilledAt}, SYSUTCDATETIME()) * @rate / 1000000.0 > @burst THEN @burst ` +
  `ELSE ${tokens} + DATEDIFF_BIG(MICROSECOND, ${refilledAt}, SYSUTCDATETIME()) * @rate / 1000000.0 END`;

/**
 * @n rows at most, @concurrency (NULL = none), @rate per second (NULL = none), @burst the bucket size. First result
 * set: the claimed rows, as the claim's OUTPUT (none when there is no room); second: one summary row (held,
 * backoff_ms, tokens_left, leased: the live leases before the claim, lease_lapses_in_ms: when the earliest of them
 * lapses, given only when they fill the limit), read by stores/limited-claim.ts.
 */
export function claimLimited(names: TransportNames): Statement<'n' | 'queue' | 'lock_timeout_ms' | 'lock_id' | 'concurrency' | 'rate' | 'burst'> {
  const s = qualifiedQueueStateTable(names);
  const match = exactQueueMatch('queue', 'queue');
  return {
    text: [
      'SET XACT_ABORT ON;',
      'SET NOCOUNT ON;',
      'DECLARE @held bit = 0, @backoff_ms bigint, @tokens float, @refilled_at datetime2, @leased int = 0, @room int, @claimed int = 0, @lapse_ms bigint;',
      VACANT_KEYS_DECLARATION,
      'BEGIN TRANSACTION;',
      'SELECT @held = CASE WHEN paused_at IS NOT NULL OR backoff_until > SYSUTCDATETIME() THEN 1 ELSE 0 END,',
      '       @backoff_ms = CASE WHEN backoff_until > SYSUTCDATETIME() THEN DATEDIFF_BIG(MILLISECOND, SYSUTCDATETIME(), backoff_until) END,',
      '       @tokens = rate_tokens, @refilled_at = rate_refilled_at',
      `FROM ${s} WITH (UPDLOCK, HOLDLOCK) WHERE ${match};`,
      'IF @@ROWCOUNT = 0',
      `    INSERT INTO ${s} (queue) VALUES (@queue);`,
      // the live leases and the earliest of their ends (when a slot frees at the latest), one range of the leased index
      'IF @concurrency IS NOT NULL',
      `    SELECT @leased = COUNT(*), @lapse_ms = DATEDIFF_BIG(MILLISECOND, SYSUTCDATETIME(), MIN(locked_until)) ${liveLeases(names)};`,
      `IF @rate IS NOT NULL SET @tokens = ${refilled('@tokens', '@refilled_at')};`,
      'SET @room = CASE WHEN @held = 1 THEN 0 ELSE @n END;',
      'IF @concurrency IS NOT NULL AND @concurrency - @leased < @room SET @room = @concurrency - @leased;',
      'IF @rate IS NOT NULL AND FLOOR(@tokens) < @room SET @room = FLOOR(@tokens);',
      'IF @room < 0 SET @room = 0;',
      'IF @room > 0',
      'BEGIN',
      ...promoteLines(names, '@room'),
      ...claimLines(names, '@room'),
      '    SET @claimed = @@ROWCOUNT;',
      'END;',
      'IF @rate IS NOT NULL',
      `    UPDATE ${s} SET rate_tokens = @tokens - @claimed, rate_refilled_at = SYSUTCDATETIME() WHERE ${match};`,
      'IF @concurrency IS NULL OR @leased < @concurrency SET @lapse_ms = NULL;',
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
      'DECLARE @state TABLE (backoff_until datetime2 NOT NULL);',
      `MERGE ${qualifiedQueueStateTable(names)} WITH (HOLDLOCK) AS target`,
      'USING (SELECT @queue AS queue) AS src',
      `    ON target.queue = src.queue AND ${exactQueueMatch('target.queue', 'queue')}`,
      'WHEN MATCHED THEN UPDATE SET',
      `    backoff_until = CASE WHEN target.backoff_until > ${until} THEN target.backoff_until ELSE ${until} END,`,
      '    updated_at = SYSUTCDATETIME()',
      'WHEN NOT MATCHED THEN INSERT (queue, backoff_until, updated_at)',
      `    VALUES (@queue, ${until}, SYSUTCDATETIME())`,
      // INTO a table variable, then SELECT: a bare OUTPUT fails on a table an operator gave a trigger (review L4)
      'OUTPUT inserted.backoff_until INTO @state;',
      'SELECT backoff_until FROM @state;',
    ].join('\n'),
    params: { queue: types.queue(), ms: types.ms() },
  };
}

/**
 * A limited queue's outlook facts (stores/limited-claim.ts limitedOutlookOf): one SELECT, no locks taken. `ready` reads
 * the claim's own ranges (ready-set.ts claimableExists); the live leases and the earliest lapse come from the leased
 * index (a lapse makes room under the limit, and makes that row claimable again).
 */
export function limitedOutlook(names: TransportNames): Statement<'queue' | 'concurrency' | 'rate' | 'burst'> {
  const s = qualifiedQueueStateTable(names);
  const match = exactQueueMatch('queue', 'queue');
  return {
    text: [
      `SELECT CAST(CASE WHEN ${claimableExists(names)}`,
      '    THEN 1 ELSE 0 END AS bit) AS ready,',
      `    CAST(CASE WHEN EXISTS (SELECT 1 FROM ${s} WHERE ${match} AND paused_at IS NOT NULL) THEN 1 ELSE 0 END AS bit) AS paused,`,
      `    (SELECT DATEDIFF_BIG(MILLISECOND, SYSUTCDATETIME(), backoff_until) FROM ${s} WHERE ${match} AND backoff_until > SYSUTCDATETIME()) AS backoff_ms,`,
      `    CASE WHEN @rate IS NULL THEN NULL ELSE (SELECT ${refilled('rate_tokens', 'rate_refilled_at')} FROM ${s} WHERE ${match}) END AS tokens,`,
      `    CASE WHEN @concurrency IS NULL THEN 0 ELSE (SELECT COUNT(*) ${liveLeases(names)}) END AS leased,`,
      `    ${leaseLapsesInMs(names)} AS lease_lapses_in_ms;`,
    ].join('\n'),
    params: { queue: types.queue(), concurrency: types.count(), rate: types.rate(), burst: types.rate() },
  };
}
