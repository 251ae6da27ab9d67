// The SQL Server transport store: the TransportStore port over one mssql pool. Statement text lives in
// statements.ts, catalog rules in verify.ts, the pool and schema plumbing shared with the channel store in
// store-common.ts; this file binds parameters, maps rows and runs the schema steps.

import { randomUUID } from 'node:crypto';
import * as sql from 'mssql';
import { transportNames, type TransportNames } from '../../sql/identifiers';
import { isTransientSqlServerError, sqlServerErrorClass, sqlServerErrorNumbers } from '../../sql/transient';
import { parseHeadersLenient } from '../../transport/headers';
import type {
  ClaimedMessage,
  ClaimOutlook,
  DeadLetterItem,
  DeadLetterMove,
  OutgoingMessage,
  PublishOutcome,
  QueueStats,
  Settlement,
  TopicPublishOutcome,
  TopicSubscription,
  TransportStore,
} from '../../transport/types';
import { deadLetterAttempts } from '../../transport/types';
import { topicOutcomes } from '../../transport/topic-outcomes';
import { subscriptionsTableName } from '../schema-names';
import { DDL_TABLE_LOCK_TIMEOUT_MS, INDEX_BUILD_COMMAND_TIMEOUT_S, type TransportStoreOptions } from '../options';
import { createSqlServerPool, type SqlServerConnectionOptions } from './connection';
import { createPoolHolder, existingPoolHolder, poolHolderFor, type PoolHolder } from './pool-guard';
import { qualifiedTable, transportStatements, type TransportStatements } from './statements';
import { topicStatements } from './topic-statements';
import { publishKeyedBatch, pruneDedupKeys } from './dedup-statements';
import { storedDedupKey } from './dedup-table-sql';
import { dedupRounds } from '../../transport/dedup';
import { claimOutlook, claimOutlookOf } from './outlook-statements';
import { jobControlStatements } from './job-control-statements';
import type { CancelOutcome, QueueState, RenewResult, RescheduleOutcome, RescheduleTime } from '../../transport/job-control';
import { waitingStatements, type WaitingStatements } from './waiting-statements';
import type { WaitingJob, WaitingQuery } from '../../transport/waiting';
import { compareSqlServerGuids, lower, rollbackQuietly, rows, SqlServerStoreBase } from './store-common';
import { historyStatements } from './history-statements';
import type { HistoryPage, HistoryQuery, JobRecord } from '../../transport/history';
import { historyPage, readJob, searchKey, type HistoryRowShape } from '../../transport/history-rows';
import { backOffQueue, claimLimited, limitedOutlook } from './limit-statements';
import { bucketSize, hasLimits, type LimitedClaim, type QueueLimits } from '../../transport/limits';
import { limitedClaimOf, limitedOutlookOf } from '../limited-claim';
import { evaluateTransportCatalog, missingIndexes, readTransportCatalog, VERIFICATION_FIX_HINT } from './verify';

export interface SqlServerStoreDeps {
  /** epoch ms; drives the retry-after window. */
  now?: () => number;
  /** [0, 1); jitters the retry-after window. */
  random?: () => number;
  /** false: the pool is shared (open.ts: one pool for the transport and the channel) and close() leaves it open. Default true. */
  ownsPool?: boolean;
}

// One connect attempt per pool, shared by every store on it, and one rebuild when the server refuses the pool's
// connections: both go through the pool's PoolHolder (pool-guard.ts), whichever store asks.

/** Connects a connect-on-first-use pool once, however many stores share it. */
export async function connectPool(pool: sql.ConnectionPool): Promise<void> {
  await poolHolderFor(pool).get();
}

/** Waits for an in-flight connect (or rebuild) to settle (mssql refuses to close a pool while it is connecting). */
export async function settlePoolConnect(pool: sql.ConnectionPool): Promise<void> {
  await existingPoolHolder(pool)?.settle();
}

/** Spec §1.4: delays up to 3650 days (the DATEADD split stays exact up to there). */
export const MAX_DELAY_MS = 3650 * 24 * 60 * 60 * 1000;
export const RETRY_AFTER_BASE_MS = 30_000;
export const RETRY_AFTER_JITTER_MS = 30_000;
const PUBLISH_DUPLICATE_RACE_ATTEMPTS = 3;

/**
 * Spec §3.2: a failed table-lock step latches the retry-after window only for a lost lock wait, never for a
 * transient connection fault (severity >= 20, a reset, an Azure failover), which the next operation retries.
 */
export function shouldLatchTableLockFailure(err: unknown): boolean {
  if ((sqlServerErrorClass(err) ?? 0) >= 20) return false;
  const n = sqlServerErrorNumbers(err)[0]; // the thrown error's own number comes first
  return n === 1222 || (n === 51000 && !isTransientSqlServerError(err));
}

/** Renew runs under a request timeout of the heartbeat beat (lock timeout / 3) in whole seconds, at least 1 s. */
export function renewRequestTimeoutMs(lockTimeoutMs: number): number {
  const seconds = Math.max(1, Math.ceil(lockTimeoutMs / 3 / 1000));
  return Math.min(seconds * 1000, 2_147_483_647);
}

/** datetime2 carries 100 ns ticks; tedious keeps the sub-millisecond part in `nanosecondsDelta`. */
function compareInstants(a: Date, b: Date): number {
  const ms = a.getTime() - b.getTime();
  if (ms !== 0) return ms;
  const na = (a as Date & { nanosecondsDelta?: number }).nanosecondsDelta ?? 0;
  const nb = (b as Date & { nanosecondsDelta?: number }).nanosecondsDelta ?? 0;
  return na - nb;
}

function delayOf(delayMs: number): number {
  if (!Number.isFinite(delayMs) || delayMs <= 0) return 0;
  if (delayMs > MAX_DELAY_MS) throw new RangeError(`delay of ${delayMs} ms exceeds the 3650-day maximum`);
  return Math.ceil(delayMs);
}

function firstNumber(result: sql.IResult<unknown>, column: string): number {
  const value = rows(result)[0]?.[column];
  return value === undefined || value === null ? 0 : Number(value);
}

/** The ack's @settlements: one { id, lock_id } per distinct fence (a repeated one would count twice). */
function settlementsJson(settlements: readonly Settlement[]): string {
  const seen = new Set<string>();
  const unique = settlements.filter((s) => {
    const key = `${lower(s.id)}/${lower(s.lockId)}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return JSON.stringify(unique.map((s) => ({ id: s.id, lock_id: s.lockId })));
}

interface RetryWindow {
  until: number;
  message: string;
  cause: unknown;
}

export class SqlServerTransportStore extends SqlServerStoreBase implements TransportStore {
  readonly kind = 'sqlserver' as const;
  readonly names: TransportNames;
  private readonly statements: TransportStatements;
  private readonly topicStatements: ReturnType<typeof topicStatements>;
  private readonly dedup: { publishKeyed: ReturnType<typeof publishKeyedBatch>; prune: ReturnType<typeof pruneDedupKeys> };
  private readonly history: ReturnType<typeof historyStatements>;
  private readonly options: TransportStoreOptions;
  private readonly clock: () => number;
  private readonly random: () => number;
  private retryWindow: RetryWindow | null = null;

  constructor(pool: sql.ConnectionPool | PoolHolder, options: TransportStoreOptions, deps: SqlServerStoreDeps = {}) {
    const names = transportNames(options.schema, options.table, 'sqlserver'); // validated before the pool gets a holder
    const statements = transportStatements(names);
    super(pool, options.logger, deps.ownsPool ?? true);
    this.names = names;
    this.statements = statements;
    this.topicStatements = topicStatements(names, subscriptionsTableName(names, 'sqlserver'));
    this.dedup = { publishKeyed: publishKeyedBatch(names), prune: pruneDedupKeys(names) };
    this.history = historyStatements(names);
    this.options = options;
    this.clock = deps.now ?? Date.now;
    this.random = deps.random ?? Math.random;
  }

  // ---- schema (ensureSchema: store-common.ts) ------------------------------------------------------------

  /** Inside a retry-after window ensureSchema fails at once, without connecting. */
  protected override beforeSchemaAttempt(): void {
    const window = this.retryWindow;
    if (window) {
      if (this.clock() < window.until) throw new Error(window.message, { cause: window.cause });
      this.retryWindow = null;
    }
  }

  protected async runSchemaAttempt(): Promise<void> {
    await this.connect();
    await this.options.schemaGate?.();
    if (!this.options.autoCreateSchema && this.options.verifyCatalog === false) {
      this.schemaReady = true;
      return;
    }
    if (!this.options.autoCreateSchema) {
      const result = evaluateTransportCatalog(await readTransportCatalog(this.pool, this.names), this.names, {
        autoCreate: false,
      });
      this.throwOnProblems(result.problems);
      if (result.status === 'absent') {
        // not latched: the migration may simply not have run yet; the next operation checks again
        throw new Error(
          `SQL Server transport table ${qualifiedTable(this.names)} does not exist (or this login cannot see it); ` +
            'run `npm run schema -- apply` or set AUTO_CREATE_SCHEMA=true.',
        );
      }
      for (const warning of result.warnings) this.logger.warn(warning);
      this.schemaReady = true;
      return;
    }

    // phase 1: schema + table under the schema applock, committed before anything else runs
    await this.runDdlTransaction(this.statements.ddlPhase1);
    await this.runDdlTransaction(this.history.ddl);
    // behind the schema gate the indexes are the schema versions' (the ready set's are deferrable: they may still be
    // building in the background, and building them here would hold this store's first operation for the build)
    const indexesFromMigrations = this.options.schemaGate !== undefined;
    if (this.options.verifyCatalog === false) {
      // no catalog to read: every index build is guarded, so phase 2 builds whatever is missing
      if (!indexesFromMigrations) await this.runPhase2(missingIndexes([], this.names));
      this.schemaReady = true;
      return;
    }
    let catalog = await readTransportCatalog(this.pool, this.names);
    const missing = indexesFromMigrations ? [] : missingIndexes(catalog.indexes, this.names);
    if (missing.length > 0) {
      await this.runPhase2(missing);
      catalog = await readTransportCatalog(this.pool, this.names);
    }
    const result = evaluateTransportCatalog(catalog, this.names, { autoCreate: true, indexesFromMigrations });
    this.throwOnProblems(result.problems);
    for (const warning of result.warnings) this.logger.warn(warning);
    this.schemaReady = true;
  }

  private throwOnProblems(problems: readonly string[]): void {
    if (problems.length > 0) throw new Error(`${problems.join(' ')} ${VERIFICATION_FIX_HINT}`);
  }

  /** A failed phase 1 may be a name collision: the table-level problems of a table that is there. */
  protected async collisionProblems(): Promise<string[]> {
    const catalog = await readTransportCatalog(this.pool, this.names);
    const result = evaluateTransportCatalog(catalog, this.names, { autoCreate: true, skipIndexes: true });
    return result.status === 'present' ? result.problems : [];
  }

  /** Index builds in their own transaction under the table applock, with an hour-long request timeout. */
  private async runPhase2(missing: readonly string[]): Promise<void> {
    const table = qualifiedTable(this.names);
    const tx = this.pool.transaction();
    try {
      await tx.begin();
      await this.run(this.statements.ddlTableLock, {}, { parent: tx });
    } catch (err) {
      await rollbackQuietly(tx);
      if (shouldLatchTableLockFailure(err)) {
        this.latch(`could not take its table lock within ${DDL_TABLE_LOCK_TIMEOUT_MS} ms`, err);
      }
      throw err;
    }
    try {
      this.logger.info(`building ${missing.join(', ')} on ${table}`);
      await this.run(this.statements.ddlBuildIndexes, {}, { parent: tx, timeoutMs: INDEX_BUILD_COMMAND_TIMEOUT_S * 1000 });
      await tx.commit();
    } catch (err) {
      await rollbackQuietly(tx);
      const numbers = sqlServerErrorNumbers(err);
      const cause = numbers.includes(1222)
        ? `index build on ${table} could not take its table lock within ${DDL_TABLE_LOCK_TIMEOUT_MS} ms (error 1222) and was rolled back`
        : `index build on ${table} failed (error ${numbers.length > 0 ? numbers.join(', ') : (err as Error)?.message ?? 'unknown'}) and was rolled back`;
      this.latch(cause, err);
    }
  }

  /** Opens the retry-after window (30 s + up to 30 s) and throws the error every caller sees inside it. */
  private latch(cause: string, err: unknown): never {
    const windowMs = RETRY_AFTER_BASE_MS + this.random() * RETRY_AFTER_JITTER_MS;
    const until = this.clock() + windowMs;
    const message =
      `SQL Server transport schema setup for ${qualifiedTable(this.names)} ${cause}; ` +
      `transport operations on this host fail until ${new Date(until).toISOString()} (retry after ${Math.round(windowMs / 1000)} s).`;
    this.retryWindow = { until, message, cause: err };
    this.logger.warn(message, err);
    throw new Error(message, { cause: err });
  }

  private async connect(): Promise<void> {
    await this.poolHolder.get();
  }

  // ---- operations ---------------------------------------------------------------------------------------

  async publish(messages: readonly OutgoingMessage[]): Promise<PublishOutcome[]> {
    if (messages.length === 0) return [];
    await this.ensureSchema();
    if (!messages.some((m) => m.dedup)) return this.insertMessages(messages);
    const outcomes: PublishOutcome[] = new Array(messages.length);
    for (const round of dedupRounds(messages)) {
      const plain = round.filter((r) => !r.message.dedup);
      const keyed = round.filter((r) => r.message.dedup);
      if (plain.length > 0) (await this.insertMessages(plain.map((r) => r.message))).forEach((o, i) => (outcomes[plain[i]!.index] = o));
      if (keyed.length > 0) (await this.publishKeyed(keyed.map((r) => r.message))).forEach((o, i) => (outcomes[keyed[i]!.index] = o));
    }
    return outcomes;
  }

  /** Messages with dedup keys, no key twice (dedupRounds), in one batch and transaction (dedup-statements.ts). */
  private async publishKeyed(messages: readonly OutgoingMessage[]): Promise<PublishOutcome[]> {
    const batch = JSON.stringify(
      messages.map((m, ord) => ({
        queue: m.queue,
        dedup_key: storedDedupKey(m.dedup!.key),
        id: m.id,
        window_ms: Math.max(1, Math.round(m.dedup!.windowMs)),
        debounce: m.dedup!.mode === 'debounce',
        payload_json: m.payloadJson,
        headers_json: JSON.stringify(m.headers ?? {}),
        delay_ms: delayOf(m.delayMs),
        priority: m.priority ?? 0,
        ord,
        ...(m.orderingKey === undefined ? {} : { ordering_key: m.orderingKey }),
      })),
    );
    // a new key two publishers inserted at once: the loser's batch rolls back whole, and the re-run finds the key held
    const result = await this.runRetryingDuplicateKeyRace(this.dedup.publishKeyed, { batch }, PUBLISH_DUPLICATE_RACE_ATTEMPTS, 'keyed publish lost a dedup-key race; re-running it');
    const byOrd = new Map(rows(result).map((r) => [Number(r.ord), r]));
    return messages.map((m, ord) => {
      const r = byOrd.get(ord);
      if (!r) throw new Error(`the keyed publish answered no row for message ${m.id}`);
      const id = lower(r.id);
      const availableAt = (r.available_at as Date | null) ?? null;
      if (r.inserted === true) return { id, inserted: true, availableAt };
      const queue = r.existing_queue === null || r.existing_queue === undefined ? undefined : String(r.existing_queue);
      return { id, inserted: false, availableAt: queue ? availableAt : null, ...(queue ? { existingQueue: queue } : {}), ...(r.debounced === true ? { debounced: true } : {}) };
    });
  }

  /** Insert-if-absent of every message in one statement (publishBatch). */
  private async insertMessages(messages: readonly OutgoingMessage[]): Promise<PublishOutcome[]> {
    // A repeated id inside one batch would make the single INSERT hit its own PK: the first one wins.
    const firstAt = new Map<string, number>();
    const unique: OutgoingMessage[] = [];
    messages.forEach((m, i) => {
      const key = lower(m.id);
      if (!firstAt.has(key)) {
        firstAt.set(key, i);
        unique.push(m);
      }
    });
    // ord keeps the publish order (created_at); the array goes in key order, so concurrent batches probe and
    // range-lock their ids in one order and cannot deadlock on each other's key ranges.
    const batch = JSON.stringify(
      unique
        .map((m, ord) => ({
          id: m.id,
          queue: m.queue,
          payload_json: m.payloadJson,
          headers_json: JSON.stringify(m.headers ?? {}),
          delay_ms: delayOf(m.delayMs),
          priority: m.priority ?? 0,
          ord,
          ...(m.orderingKey === undefined ? {} : { ordering_key: m.orderingKey }),
        }))
        .sort((a, b) => compareSqlServerGuids(a.id, b.id)),
    );
    // a lost duplicate-key race rolls the whole INSERT back (a keyed batch's key counts with it); the re-run reports
    // the rows that now exist as duplicates
    const keyed = unique.some((m) => m.orderingKey !== undefined);
    const result = await this.runRetryingDuplicateKeyRace(
      keyed ? this.statements.publishOrderedBatch : this.statements.publishBatch,
      { batch },
      PUBLISH_DUPLICATE_RACE_ATTEMPTS,
      'publish lost a duplicate-key race; re-running the insert-if-absent',
    );
    const inserted = new Map(rows(result, 0).map((r) => [lower(r.id), r.available_at as Date]));
    const stored = new Map(rows(result, 1).map((r) => [lower(r.id), { availableAt: r.available_at as Date, queue: String(r.queue) }]));
    const firstQueue = new Map(unique.map((m) => [lower(m.id), m.queue]));
    return messages.map((m, i) => {
      const key = lower(m.id);
      const insertedAt = inserted.get(key);
      if (insertedAt && firstAt.get(key) === i) return { id: m.id, inserted: true, availableAt: insertedAt };
      // a repeat inside this batch is a duplicate of the row its first occurrence inserted
      if (insertedAt) return { id: m.id, inserted: false, availableAt: insertedAt, existingQueue: firstQueue.get(key)! };
      const row = stored.get(key);
      return row ? { id: m.id, inserted: false, availableAt: row.availableAt, existingQueue: row.queue } : { id: m.id, inserted: false, availableAt: null };
    });
  }

  async publishToTopic(topic: string, messages: readonly OutgoingMessage[]): Promise<TopicPublishOutcome[]> {
    if (messages.length === 0) return [];
    await this.ensureSchema();
    // ids are unique per publish (parsePublishBody); ord keeps the publish order (created_at)
    const batch = JSON.stringify(
      messages.map((m, ord) => ({ id: m.id, payload_json: m.payloadJson, headers_json: JSON.stringify(m.headers ?? {}), delay_ms: delayOf(m.delayMs), priority: m.priority ?? 0, ord })),
    );
    const result = await this.runRetryingDuplicateKeyRace(
      this.topicStatements.publishToTopic,
      { batch, topic },
      PUBLISH_DUPLICATE_RACE_ATTEMPTS,
      'topic publish lost a duplicate-key race; re-running the insert-if-absent',
    );
    const copy = (inserted: boolean) => (r: Record<string, unknown>) => ({ id: lower(r.id), queue: String(r.queue), inserted, availableAt: r.available_at as Date });
    return topicOutcomes(messages, [...rows(result, 0).map(copy(true)), ...rows(result, 1).map(copy(false))]);
  }

  async recordSubscriptions(subscriptions: readonly TopicSubscription[]): Promise<number> {
    if (subscriptions.length === 0) return 0;
    await this.ensureSchema();
    const json = JSON.stringify(subscriptions.map((s) => ({ topic: s.topic, subscription: s.subscription })));
    const result = await this.runRetryingDuplicateKeyRace(
      this.topicStatements.recordSubscriptions,
      { subscriptions: json },
      PUBLISH_DUPLICATE_RACE_ATTEMPTS,
      'recording subscriptions lost a duplicate-key race; re-running the insert-if-absent',
    );
    return result.rowsAffected.reduce((a, b) => a + b, 0);
  }

  async topicSubscriptions(topic: string): Promise<TopicSubscription[]> {
    await this.ensureSchema();
    return rows(await this.run(this.topicStatements.topicSubscriptions, { topic })).map((r) => ({ topic: String(r.topic), subscription: String(r.subscription) }));
  }

  async claim(queue: string, max: number, lockTimeoutMs: number, lockId: string = randomUUID()): Promise<ClaimedMessage[]> {
    const n = Math.floor(max);
    if (!(n > 0)) return [];
    await this.ensureSchema();
    const result = await this.run(this.statements.claimBatch, {
      n,
      queue,
      lock_timeout_ms: Math.max(1, Math.ceil(lockTimeoutMs)),
      lock_id: lockId,
    });
    return this.toClaimed(rows(result));
  }

  /**
   * A limited queue's claim: one batch, one short transaction holding the queue's state row (limit-statements.ts).
   * The summary row is the batch's last result set; the claimed rows come before it.
   */
  async claimLimited(queue: string, max: number, lockTimeoutMs: number, lockId: string, limits: QueueLimits): Promise<LimitedClaim<ClaimedMessage>> {
    await this.ensureSchema();
    const statement = (this.limitedClaimStatement ??= claimLimited(this.names));
    const result = await this.run(statement, {
      n: Math.max(0, Math.floor(max)),
      queue,
      lock_timeout_ms: Math.max(1, Math.ceil(lockTimeoutMs)),
      lock_id: lockId,
      concurrency: limits.concurrency ?? null,
      rate: limits.ratePerSecond ?? null,
      burst: bucketSize(limits),
    });
    const sets = (result.recordsets as unknown as Array<Array<Record<string, unknown>>>) ?? [];
    const summary = sets.length > 0 ? sets[sets.length - 1]![0] : undefined;
    return limitedClaimOf(this.toClaimed(sets.slice(0, -1).flat()), summary, max, limits);
  }
  private limitedClaimStatement: ReturnType<typeof claimLimited> | undefined;

  async backOffQueue(queue: string, delayMs: number): Promise<Date> {
    await this.ensureSchema();
    const statement = (this.backOffStatement ??= backOffQueue(this.names));
    return rows(await this.run(statement, { queue, ms: Math.max(0, Math.round(delayMs)) }))[0]!.backoff_until as Date;
  }
  private backOffStatement: ReturnType<typeof backOffQueue> | undefined;

  /** OUTPUT has no order: the claim order again (seq breaks ties; rows from before the ready set have none). */
  private toClaimed(claimed: Array<Record<string, unknown>>): ClaimedMessage[] {
    const seq = (r: Record<string, unknown>) => (r.seq === null || r.seq === undefined ? -1 : Number(r.seq));
    return claimed
      .sort(
        (a, b) =>
          Number(b.priority ?? 0) - Number(a.priority ?? 0) ||
          compareInstants(a.available_at as Date, b.available_at as Date) ||
          seq(a) - seq(b) ||
          compareInstants(a.created_at as Date, b.created_at as Date),
      )
      .map((r) => ({
        id: lower(r.id),
        lockId: lower(r.lock_id),
        queue: String(r.queue),
        payloadJson: String(r.payload_json),
        headers: parseHeadersLenient(r.headers_json as string | null),
        attempt: Number(r.attempts),
        createdAt: r.created_at as Date,
        priority: Number(r.priority ?? 0),
        // the drain claims again at once after a keyed job's ack (its key's next job became claimable)
        ...(r.ordering_key === null || r.ordering_key === undefined ? {} : { orderingKey: String(r.ordering_key) }),
      }));
  }

  async ack(settlements: readonly Settlement[]): Promise<number> {
    if (settlements.length === 0) return 0;
    await this.ensureSchema();
    return firstNumber(await this.run(this.statements.ackBatch, { settlements: settlementsJson(settlements) }), 'affected');
  }

  async ackToHistory(settlements: readonly Settlement[]): Promise<number> {
    if (settlements.length === 0) return 0;
    await this.ensureSchema();
    return firstNumber(await this.run(this.history.ackToHistory, { settlements: settlementsJson(settlements) }), 'affected');
  }

  async findJob(id: string, deadLetterQueue: string): Promise<JobRecord | null> {
    await this.ensureSchema();
    return readJob(
      rows(await this.run(this.history.findJob, { id })).map((r) => ({
        source: r.source === 'history' ? ('history' as const) : ('queue' as const),
        id: lower(r.id),
        queue: String(r.queue),
        attempts: Number(r.attempts ?? 0),
        headers: parseHeadersLenient(r.headers_json as string | null),
        createdAt: r.created_at as Date,
        availableAt: r.available_at as Date,
        completedAt: (r.completed_at as Date | null) ?? null,
        leased: r.leased === true || r.leased === 1,
        delayed: r.delayed === true || r.delayed === 1,
        deadLetterReason: (r.dead_letter_reason as string | null) ?? null,
        ...(r.priority === null || r.priority === undefined ? {} : { priority: Number(r.priority) }),
        orderingKey: (r.ordering_key as string | null) ?? null,
      })),
      deadLetterQueue,
    );
  }

  async searchHistory(query: HistoryQuery): Promise<HistoryPage> {
    const top = Math.floor(query.top);
    if (!(top > 0)) return { items: [] };
    await this.ensureSchema();
    const { byQueue, key } = searchKey(query);
    const result = await this.run(byQueue ? this.history.searchByQueue : this.history.searchByCorrelation, {
      key,
      since: query.since?.toISOString() ?? '0001-01-01T00:00:00',
      until: query.until?.toISOString() ?? '9999-12-31T23:59:59.9999999',
      after_at: query.after?.completedAt ?? '9999-12-31T23:59:59.9999999',
      after_id: query.after?.id ?? 'ffffffff-ffff-ffff-ffff-ffffffffffff',
      state: query.state ?? null,
      top,
    });
    return historyPage(rows(result) as unknown as HistoryRowShape[], top);
  }

  async pruneHistoryBatch(queue: string, retentionMs: number): Promise<number> {
    await this.ensureSchema();
    return firstNumber(await this.run(this.history.pruneHistory, { queue, neg_retention_ms: -Math.round(retentionMs) }), 'deleted');
  }

  async release(settlement: Settlement, delayMs: number): Promise<boolean> {
    await this.ensureSchema();
    const result = await this.run(this.statements.release, {
      id: settlement.id,
      lock_id: settlement.lockId,
      delay_ms: delayOf(delayMs),
    });
    return firstNumber(result, 'affected') > 0;
  }

  async releaseLostClaim(queue: string, lockId: string): Promise<number> {
    await this.ensureSchema();
    return firstNumber(await this.run(this.statements.releaseLostClaim, { queue, lock_id: lockId }), 'affected');
  }

  async releaseUnstarted(settlements: readonly Settlement[]): Promise<number> {
    if (settlements.length === 0) return 0;
    await this.ensureSchema();
    const json = JSON.stringify(settlements.map((s) => ({ id: s.id, lock_id: s.lockId })));
    return firstNumber(await this.run(this.statements.releaseUnstarted, { settlements: json }), 'affected');
  }

  async renew(settlement: Settlement, lockTimeoutMs: number): Promise<RenewResult> {
    await this.ensureSchema();
    const result = await this.run(
      this.statements.renew,
      { id: settlement.id, lock_id: settlement.lockId, lock_timeout_ms: Math.max(1, Math.ceil(lockTimeoutMs)) },
      { timeoutMs: renewRequestTimeoutMs(lockTimeoutMs) },
    );
    if (firstNumber(result, 'affected') === 0) return false;
    const flag = rows(result)[0]?.cancel_requested;
    return flag === true || flag === 1 ? 'cancel-requested' : true;
  }

  private controlStatements: ReturnType<typeof jobControlStatements> | undefined;
  private get control(): ReturnType<typeof jobControlStatements> {
    return (this.controlStatements ??= jobControlStatements(this.names));
  }

  async cancel(queue: string, id: string, running: boolean): Promise<CancelOutcome> {
    await this.ensureSchema();
    const row = rows(await this.run(this.control.cancel, { queue, id, running }))[0] ?? {};
    if (Number(row.deleted) > 0) return 'deleted';
    if (Number(row.marked) > 0) return 'cancelling';
    return row.present === true || row.present === 1 ? 'running' : 'absent';
  }

  async reschedule(queue: string, id: string, when: RescheduleTime): Promise<RescheduleOutcome> {
    await this.ensureSchema();
    const row =
      rows(
        await this.run(this.control.reschedule, {
          queue,
          id,
          available_at: 'availableAt' in when ? when.availableAt : null,
          delay_ms: 'delayMs' in when ? delayOf(when.delayMs) : 0,
        }),
      )[0] ?? {};
    if (row.available_at instanceof Date) return { outcome: 'rescheduled', availableAt: row.available_at };
    return row.present === true || row.present === 1 ? { outcome: 'running' } : { outcome: 'absent' };
  }

  async setQueuePaused(queue: string, paused: boolean): Promise<QueueState> {
    await this.ensureSchema();
    const at = rows(await this.run(this.control.setQueuePaused, { queue, paused }))[0]?.paused_at;
    return { queue, paused: at instanceof Date, pausedAt: at instanceof Date ? at : null };
  }

  async queueState(queue: string): Promise<QueueState> {
    await this.ensureSchema();
    const row = rows(await this.run(this.control.queueState, { queue }))[0];
    const at = row?.paused_at;
    const backoffUntil = (row?.backoff_until as Date | null | undefined) ?? null;
    return { queue, paused: at instanceof Date, pausedAt: at instanceof Date ? at : null, backoffUntil };
  }

  async deadLetter(move: DeadLetterMove): Promise<boolean> {
    await this.ensureSchema();
    const result = await this.run(this.statements.deadLetterMove, {
      source_id: move.source.id,
      lock_id: move.source.lockId,
      new_id: move.newId,
      dlq: move.deadLetterQueue,
      payload_json: move.payloadJson,
      headers_json: JSON.stringify(move.headers),
      reason: move.reason,
    });
    return firstNumber(result, 'moved') === 1;
  }

  async pruneDedupKeys(): Promise<number> {
    await this.ensureSchema();
    return firstNumber(await this.run(this.dedup.prune, {}), 'deleted');
  }

  async pruneDeadLetterBatch(deadLetterQueue: string, retentionMs: number): Promise<number> {
    await this.ensureSchema();
    const retention = Math.max(0, Math.min(Math.floor(retentionMs), MAX_DELAY_MS));
    const result = await this.run(this.statements.pruneDeadLetterBatch, {
      dlq: deadLetterQueue,
      neg_retention_ms: -retention,
    });
    return firstNumber(result, 'deleted');
  }

  async queueStats(queue: string, deadLetterQueue: string): Promise<QueueStats> {
    await this.ensureSchema();
    const row = rows(await this.run(this.statements.queueStats, { queue, dlq: deadLetterQueue }))[0] ?? {};
    const age = row.oldest_ready_age_seconds;
    return {
      queue,
      ready: Number(row.ready ?? 0),
      delayed: Number(row.delayed ?? 0),
      leased: Number(row.leased ?? 0),
      deadLettered: Number(row.dead_lettered ?? 0),
      oldestReadyAgeSeconds: age === null || age === undefined ? null : Math.max(0, Number(age)),
    };
  }

  async queueNames(max: number): Promise<string[]> {
    const n = Math.floor(max);
    if (!(n > 0)) return [];
    await this.ensureSchema();
    return rows(await this.run(this.statements.queueNames, { max: n })).map((r) => String(r.queue));
  }

  async listDeadLetters(deadLetterQueue: string, sourceQueue: string, top: number): Promise<DeadLetterItem[]> {
    const n = Math.floor(top);
    if (!(n > 0)) return [];
    await this.ensureSchema();
    const result = await this.run(this.statements.listDeadLetters, { top: n, dlq: deadLetterQueue, source: sourceQueue });
    return rows(result).map((r) => ({
      id: lower(r.id),
      sourceQueue,
      reason: r.dead_letter_reason === null || r.dead_letter_reason === undefined ? null : String(r.dead_letter_reason),
      payloadJson: String(r.payload_json),
      headers: parseHeadersLenient(r.headers_json as string | null),
      attempts: deadLetterAttempts(r.attempts),
      createdAt: r.created_at as Date,
    }));
  }

  async requeueDeadLetter(deadLetterQueue: string, sourceQueue: string, id: string): Promise<boolean> {
    await this.ensureSchema();
    const result = await this.run(this.statements.requeueDeadLetter, { id, dlq: deadLetterQueue, source: sourceQueue });
    return firstNumber(result, 'affected') > 0;
  }

  async deleteDeadLetter(deadLetterQueue: string, sourceQueue: string, id: string): Promise<boolean> {
    await this.ensureSchema();
    const result = await this.run(this.statements.deleteDeadLetter, { id, dlq: deadLetterQueue, source: sourceQueue });
    return firstNumber(result, 'affected') > 0;
  }

  async claimOutlook(queue: string, limits?: QueueLimits): Promise<ClaimOutlook> {
    await this.ensureSchema();
    if (hasLimits(limits)) {
      const statement = (this.limitedOutlookStatement ??= limitedOutlook(this.names));
      const params = { queue, concurrency: limits.concurrency ?? null, rate: limits.ratePerSecond ?? null, burst: bucketSize(limits) };
      return limitedOutlookOf(rows(await this.run(statement, params))[0], limits);
    }
    return claimOutlookOf(rows(await this.run((this.outlook ??= claimOutlook(this.names)), { queue }))[0]);
  }
  private outlook: ReturnType<typeof claimOutlook> | undefined;
  private limitedOutlookStatement: ReturnType<typeof limitedOutlook> | undefined;

  async listWaiting(query: WaitingQuery): Promise<WaitingJob[]> {
    const top = Math.floor(query.top);
    if (!(top > 0)) return [];
    await this.ensureSchema();
    const statement = (this.waiting ??= waitingStatements(this.names))[`${query.state}:${query.order}`];
    return rows(await this.run(statement, { queue: query.queue, top })).map((r) => ({
      id: lower(r.id),
      payloadJson: String(r.payload_json),
      headers: parseHeadersLenient(r.headers_json as string | null),
      attempts: Number(r.attempts ?? 0),
      availableAt: r.available_at as Date,
      createdAt: r.created_at as Date,
      priority: Number(r.priority ?? 0),
      ...(r.ordering_key === null || r.ordering_key === undefined ? {} : { orderingKey: String(r.ordering_key) }),
    }));
  }
  private waiting: WaitingStatements | undefined;

  async hasMessage(queue: string, id: string): Promise<boolean> {
    await this.ensureSchema();
    const value = rows(await this.run(this.statements.hasMessage, { id, queue }))[0]?.present;
    return value === true || value === 1;
  }

  /** The database clock. Deliberately schema-free: it is the health probe, and must answer before migration. */
  async now(): Promise<Date> {
    return rows(await this.run(this.statements.now, {}))[0]?.now as Date;
  }
}

/** A store over a new, connect-on-first-use pool. Throws at once on invalid schema/table names. */
export function openSqlServerTransportStore(
  connection: SqlServerConnectionOptions,
  storeOptions: TransportStoreOptions,
  deps?: SqlServerStoreDeps,
): SqlServerTransportStore {
  transportNames(storeOptions.schema, storeOptions.table, 'sqlserver'); // validate before making a pool
  const holder = createPoolHolder(() => createSqlServerPool(connection, storeOptions.logger), storeOptions.logger);
  return new SqlServerTransportStore(holder, storeOptions, deps);
}
