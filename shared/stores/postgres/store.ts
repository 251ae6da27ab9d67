import { createHash, randomInt, randomUUID } from 'node:crypto';
import { transportNames, type TransportNames } from '../../sql/identifiers';
import { jsonbSafe, parseHeadersLenient } from '../../transport/headers';
import type {
  ClaimedMessage,
  ClaimOutlook,
  DeadLetterItem,
  DeadLetterMove,
  OutgoingMessage,
  PublishOutcome,
  QueueStats,
  Settlement,
  StoreKind,
  TopicPublishOutcome,
  TopicSubscription,
  TransportStore,
} from '../../transport/types';
import { deadLetterAttempts } from '../../transport/types';
import { topicOutcomes } from '../../transport/topic-outcomes';
import { INDEX_BUILD_COMMAND_TIMEOUT_S, type TransportStoreOptions } from '../options';
import type { PgClient } from './client';
import {
  advisoryKey,
  createIndexesSql,
  createTableSql,
  inspectTransportTable,
  schemaLockResource,
  tableLockResource,
} from './ddl';
import { subscriptionsTableName } from '../schema-names';
import { notifyPrefix, pgStatements, type PgStatements } from './statements';
import { pgTopicStatements, type PgTopicStatements } from './topic-statements';
import { pgClaimOutlookStatement, pgLimitedOutlookStatement } from './outlook-statements';
import { pgJobControlStatements, pgQueueStateTableDdl, type PgJobControlStatements } from './job-control-statements';
import { queueStateTableName } from '../queue-state-names';
import type { CancelOutcome, QueueState, RenewResult, RescheduleOutcome, RescheduleTime } from '../../transport/job-control';
import { pgWaitingStatements, type PgWaitingStatements } from './waiting-statements';
import { pgLimitColumnsDdl, pgLimitStatements, type PgLimitStatements } from './limit-statements';
import { bucketSize, hasLimits, type LimitedClaim, type QueueLimits } from '../../transport/limits';
import { limitedClaimOf, limitedOutlookOf, type LimitedOutlookRow } from '../limited-claim';
import type { WaitingJob, WaitingQuery } from '../../transport/waiting';

/** The limited claim's summary row (limit-statements.ts). */
interface LimitStateRow {
  kind: 'job' | 'state';
  held: boolean | null;
  backoff_ms: number | null;
  tokens_left: number | null;
  leased: number | null;
  lease_lapses_in_ms: number | null;
}

interface ClaimRow {
  id: string;
  queue: string;
  payload_json: string;
  headers_json: string;
  attempts: number;
  lock_id: string;
  created_at: Date;
  available_at: Date;
}

/** Serves a PostgreSQL server (pg Pool) and the embedded PGlite alike. */
export class PostgresTransportStore implements TransportStore {
  readonly kind: StoreKind;
  readonly names: TransportNames;
  private readonly sql: PgStatements;
  private readonly topicSql: PgTopicStatements;
  private readonly controlSql: PgJobControlStatements;
  private readonly queueStateTable: string;
  /** Prepared-statement names, derived from the text so two stores sharing a pool never clash. */
  private readonly prepared: Record<keyof PgStatements, string>;
  private ready = false;
  private attempt?: Promise<void>;
  private retryAfter = 0;
  private retryCause?: Error;
  private warned = false;

  constructor(
    private readonly client: PgClient,
    private readonly options: TransportStoreOptions,
  ) {
    this.kind = client.kind;
    this.names = transportNames(options.schema, options.table, 'postgres');
    this.sql = pgStatements(this.names);
    this.topicSql = pgTopicStatements(this.names, subscriptionsTableName(this.names, 'postgres'));
    this.queueStateTable = queueStateTableName(this.names, 'postgres');
    this.controlSql = pgJobControlStatements(this.names, this.queueStateTable);
    this.prepared = Object.fromEntries(
      Object.entries(this.sql).map(([k, text]) => [k, `ar_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`]),
    ) as Record<keyof PgStatements, string>;
  }

  ensureSchema(): Promise<void> {
    if (this.ready) return Promise.resolve();
    if (Date.now() < this.retryAfter) {
      return Promise.reject(
        new Error(`the transport schema work failed and is retried after ${new Date(this.retryAfter).toISOString()}: ${this.retryCause?.message}`, {
          cause: this.retryCause,
        }),
      );
    }
    this.attempt ??= this.createOrVerify().finally(() => (this.attempt = undefined));
    return this.attempt;
  }

  private async createOrVerify(): Promise<void> {
    await this.options.schemaGate?.();
    const n = this.names;
    let state = await inspectTransportTable(this.client, n);
    if (this.options.autoCreateSchema) {
      if (!state.exists) {
        await this.client.transaction(async (tx) => {
          await tx.query(`SET LOCAL lock_timeout = '60s'`);
          await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [advisoryKey(schemaLockResource(n.schema))]);
          for (const stmt of splitStatements(createTableSql(n))) await tx.query(stmt);
        });
        state = await inspectTransportTable(this.client, n);
      }
      if (state.exists && state.problems.length === 0 && state.missingIndexes) {
        try {
          await this.client.transaction(async (tx) => {
            await tx.query(`SET LOCAL lock_timeout = '5s'`);
            // A build's run time grows with the table: an hour, not the pool's per-statement timeout (spec §3.2).
            await tx.query(`SET LOCAL statement_timeout = '${INDEX_BUILD_COMMAND_TIMEOUT_S}s'`);
            await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [advisoryKey(tableLockResource(n.schema, n.table))]);
            for (const stmt of splitStatements(createIndexesSql(n))) await tx.query(stmt);
          });
        } catch (err) {
          // A lost lock wait or a failed build latches a jittered 30–60 s window (spec §3.2) so every
          // operation does not queue writers behind another 5 s lock wait.
          this.retryAfter = Date.now() + 30_000 + randomInt(30_000);
          this.retryCause = err as Error;
          this.options.logger.error(`transport index build on ${n.schema}.${n.table} failed; retrying after 30–60 s`, err);
          throw err;
        }
        state = await inspectTransportTable(this.client, n);
      }
    }
    if (this.options.autoCreateSchema && state.exists) await this.ensureQueueStateTable();
    if (!state.exists) {
      throw new Error(
        `the transport table ${n.schema}.${n.table} does not exist. Run \`npm run schema -- apply\` (or print the DDL with ` +
          '`npm run schema -- print --dialect postgres`), or set AUTO_CREATE_SCHEMA=true.',
      );
    }
    if (state.problems.length > 0) throw new Error(`the transport table does not have the expected shape:\n- ${state.problems.join('\n- ')}`);
    if (state.warnings.length > 0 && !this.warned) {
      this.warned = true;
      for (const w of state.warnings) this.options.logger.warn(w);
    }
    this.ready = true;
  }

  /**
   * The claim reads the queue-state table (pause), so a store that creates its own table creates that one too
   * (migration 5 does the same for migrated schemas); under the schema lock, as a no-op when it is there.
   */
  private async ensureQueueStateTable(): Promise<void> {
    const n = this.names;
    const present = await this.client.query<{ present: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name = 'backoff_until') AS present`,
      [n.schema, this.queueStateTable],
    );
    if (present.rows[0]?.present) return;
    await this.client.transaction(async (tx) => {
      await tx.query(`SET LOCAL lock_timeout = '60s'`);
      await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [advisoryKey(schemaLockResource(n.schema))]);
      await tx.query(pgQueueStateTableDdl(n.schema, this.queueStateTable));
      // the limit and backoff columns (migration 8 adds them to migrated schemas)
      await tx.query(pgLimitColumnsDdl(n.schema, this.queueStateTable));
    });
  }

  async publish(messages: readonly OutgoingMessage[]): Promise<PublishOutcome[]> {
    if (messages.length === 0) return [];
    await this.ensureSchema();
    const inserted = await this.client.query<{ id: string; available_at: Date }>(this.sql.publish, [
      messages.map((m) => m.id),
      messages.map((m) => m.queue),
      messages.map((m) => m.payloadJson),
      messages.map((m) => JSON.stringify(m.headers)),
      messages.map((m) => Math.max(0, Math.round(m.delayMs))),
      notifyPrefix(this.names),
    ], this.prepared.publish);
    const byId = new Map(inserted.rows.map((r) => [r.id, r.available_at]));
    const duplicates = messages.filter((m) => !byId.has(m.id.toLowerCase()));
    const existing = new Map<string, { available_at: Date; queue: string }>();
    if (duplicates.length > 0) {
      const rows = await this.client.query<{ id: string; available_at: Date; queue: string }>(this.sql.existing, [duplicates.map((m) => m.id)]);
      for (const r of rows.rows) existing.set(r.id, r);
    }
    return messages.map((m) => {
      const id = m.id.toLowerCase();
      const at = byId.get(id);
      if (at) return { id, inserted: true, availableAt: at };
      const row = existing.get(id);
      return row ? { id, inserted: false, availableAt: row.available_at, existingQueue: row.queue } : { id, inserted: false, availableAt: null };
    });
  }

  async publishToTopic(topic: string, messages: readonly OutgoingMessage[]): Promise<TopicPublishOutcome[]> {
    if (messages.length === 0) return [];
    await this.ensureSchema();
    const r = await this.client.query<{ id: string; queue: string; inserted: boolean; available_at: Date | null }>(this.topicSql.publishToTopic, [
      messages.map((m) => m.id),
      messages.map((m) => m.payloadJson),
      messages.map((m) => JSON.stringify(m.headers)),
      messages.map((m) => Math.max(0, Math.round(m.delayMs))),
      topic,
      notifyPrefix(this.names),
    ]);
    return topicOutcomes(messages, r.rows.map((row) => ({ id: row.id, queue: row.queue, inserted: row.inserted, availableAt: row.available_at })));
  }

  async recordSubscriptions(subscriptions: readonly TopicSubscription[]): Promise<number> {
    if (subscriptions.length === 0) return 0;
    await this.ensureSchema();
    const r = await this.client.query(this.topicSql.recordSubscriptions, [subscriptions.map((s) => s.topic), subscriptions.map((s) => s.subscription)]);
    return r.rowCount;
  }

  async topicSubscriptions(topic: string): Promise<TopicSubscription[]> {
    await this.ensureSchema();
    const r = await this.client.query<{ topic: string; subscription: string }>(this.topicSql.topicSubscriptions, [topic]);
    return r.rows.map((row) => ({ topic: row.topic, subscription: row.subscription }));
  }

  async claim(queue: string, max: number, lockTimeoutMs: number, lockId: string = randomUUID()): Promise<ClaimedMessage[]> {
    await this.ensureSchema();
    const r = await this.client.query<ClaimRow>(this.sql.claim, [queue, max, Math.round(lockTimeoutMs), lockId], this.prepared.claim);
    return this.toClaimed(r.rows);
  }

  private toClaimed(rows: ClaimRow[]): ClaimedMessage[] {
    return rows
      .sort((a, b) => a.available_at.getTime() - b.available_at.getTime() || a.created_at.getTime() - b.created_at.getTime())
      .map((row) => ({
        id: row.id,
        lockId: row.lock_id,
        queue: row.queue,
        payloadJson: row.payload_json,
        headers: parseHeadersLenient(row.headers_json),
        attempt: row.attempts,
        createdAt: row.created_at,
      }));
  }

  /**
   * A limited queue's claim (transport/limits.ts): one short transaction that locks the queue's state row, then
   * claims at most the room its limits leave (limit-statements.ts). The rows carry `lockId` like any claim.
   */
  async claimLimited(queue: string, max: number, lockTimeoutMs: number, lockId: string, limits: QueueLimits): Promise<LimitedClaim<ClaimedMessage>> {
    await this.ensureSchema();
    const sql = (this.limitSql ??= pgLimitStatements(this.names));
    const values = [queue, Math.max(0, Math.floor(max)), Math.round(lockTimeoutMs), lockId, limits.concurrency ?? null, limits.ratePerSecond ?? null, bucketSize(limits)];
    const r = await this.client.transaction(async (tx) => {
      if ((await tx.query(sql.lock, [queue])).rows.length === 0) {
        await tx.query(sql.ensureRow, [queue]);
        await tx.query(sql.lock, [queue]);
      }
      return tx.query<ClaimRow & LimitStateRow>(sql.claim, values);
    });
    const jobs = r.rows.filter((row) => row.kind === 'job');
    return limitedClaimOf(this.toClaimed(jobs), r.rows.find((row) => row.kind === 'state'), max, limits);
  }
  private limitSql: PgLimitStatements | undefined;

  async backOffQueue(queue: string, delayMs: number): Promise<Date> {
    await this.ensureSchema();
    const sql = (this.limitSql ??= pgLimitStatements(this.names));
    const r = await this.client.query<{ backoff_until: Date }>(sql.backOff, [queue, Math.max(0, Math.round(delayMs))]);
    return r.rows[0]!.backoff_until;
  }

  async ack(settlements: readonly Settlement[]): Promise<number> {
    if (settlements.length === 0) return 0;
    await this.ensureSchema();
    const r = await this.client.query(this.sql.ack, [settlements.map((s) => s.id), settlements.map((s) => s.lockId)], this.prepared.ack);
    return r.rowCount;
  }

  async release(s: Settlement, delayMs: number): Promise<boolean> {
    await this.ensureSchema();
    const r = await this.client.query(this.sql.release, [s.id, s.lockId, Math.max(0, Math.round(delayMs))], this.prepared.release);
    return r.rowCount > 0;
  }

  async releaseUnstarted(settlements: readonly Settlement[]): Promise<number> {
    if (settlements.length === 0) return 0;
    await this.ensureSchema();
    const r = await this.client.query(this.sql.releaseUnstarted, [settlements.map((s) => s.id), settlements.map((s) => s.lockId)], this.prepared.releaseUnstarted);
    return r.rowCount;
  }

  async releaseLostClaim(queue: string, lockId: string): Promise<number> {
    await this.ensureSchema();
    const r = await this.client.query(this.sql.releaseLostClaim, [queue, lockId], this.prepared.releaseLostClaim);
    return r.rowCount;
  }

  async renew(s: Settlement, lockTimeoutMs: number): Promise<RenewResult> {
    await this.ensureSchema();
    const r = await this.client.query<{ cancel_requested: boolean }>(this.sql.renew, [s.id, s.lockId, Math.round(lockTimeoutMs)], this.prepared.renew);
    const row = r.rows[0];
    return row === undefined ? false : row.cancel_requested ? 'cancel-requested' : true;
  }

  async cancel(queue: string, id: string, running: boolean): Promise<CancelOutcome> {
    await this.ensureSchema();
    const r = await this.client.query<{ deleted: number; marked: number; present: boolean }>(this.controlSql.cancel, [queue, id, running]);
    const row = r.rows[0]!;
    return row.deleted > 0 ? 'deleted' : row.marked > 0 ? 'cancelling' : row.present ? 'running' : 'absent';
  }

  async reschedule(queue: string, id: string, when: RescheduleTime): Promise<RescheduleOutcome> {
    await this.ensureSchema();
    const at = 'availableAt' in when ? when.availableAt : null;
    const delay = 'delayMs' in when ? Math.max(0, Math.round(when.delayMs)) : 0;
    const r = await this.client.query<{ available_at: Date | null; present: boolean }>(this.controlSql.reschedule, [queue, id, at, delay, notifyPrefix(this.names)]);
    const row = r.rows[0]!;
    if (row.available_at) return { outcome: 'rescheduled', availableAt: row.available_at };
    return row.present ? { outcome: 'running' } : { outcome: 'absent' };
  }

  async setQueuePaused(queue: string, paused: boolean): Promise<QueueState> {
    await this.ensureSchema();
    const r = await this.client.query<{ paused_at: Date | null }>(this.controlSql.setPaused, [queue, paused, notifyPrefix(this.names)]);
    const at = r.rows[0]?.paused_at ?? null;
    return { queue, paused: at !== null, pausedAt: at };
  }

  async queueState(queue: string): Promise<QueueState> {
    await this.ensureSchema();
    const r = await this.client.query<{ paused_at: Date | null; backoff_until: Date | null }>(this.controlSql.queueState, [queue]);
    const at = r.rows[0]?.paused_at ?? null;
    return { queue, paused: at !== null, pausedAt: at, backoffUntil: r.rows[0]?.backoff_until ?? null };
  }

  async deadLetter(move: DeadLetterMove): Promise<boolean> {
    await this.ensureSchema();
    const r = await this.client.query(this.sql.deadLetter, [
      move.source.id,
      move.source.lockId,
      move.newId,
      move.deadLetterQueue,
      move.payloadJson,
      JSON.stringify(move.headers),
      jsonbSafe(move.reason),
    ], this.prepared.deadLetter);
    return r.rows.length === 1;
  }

  async pruneDeadLetterBatch(deadLetterQueue: string, retentionMs: number): Promise<number> {
    await this.ensureSchema();
    const r = await this.client.query(this.sql.pruneDeadLetters, [deadLetterQueue, Math.round(retentionMs)]);
    return r.rowCount;
  }

  async queueStats(queue: string, deadLetterQueue: string): Promise<QueueStats> {
    await this.ensureSchema();
    const r = await this.client.query<{
      ready: number;
      delayed: number;
      leased: number;
      dead_lettered: number;
      oldest_ready_age_seconds: number | null;
    }>(this.sql.stats, [queue, deadLetterQueue]);
    const row = r.rows[0]!;
    return {
      queue,
      ready: row.ready,
      delayed: row.delayed,
      leased: row.leased,
      deadLettered: row.dead_lettered,
      oldestReadyAgeSeconds: row.oldest_ready_age_seconds === null ? null : Math.max(0, Number(row.oldest_ready_age_seconds)),
    };
  }

  async listDeadLetters(deadLetterQueue: string, sourceQueue: string, top: number): Promise<DeadLetterItem[]> {
    await this.ensureSchema();
    const r = await this.client.query<{ id: string; payload_json: string; headers_json: string; dead_letter_reason: string | null; attempts: number; created_at: Date }>(
      this.sql.listDeadLetters,
      [deadLetterQueue, sourceQueue, top],
    );
    return r.rows.map((row) => ({
      id: row.id,
      sourceQueue,
      reason: row.dead_letter_reason,
      payloadJson: row.payload_json,
      headers: parseHeadersLenient(row.headers_json),
      attempts: deadLetterAttempts(row.attempts),
      createdAt: row.created_at,
    }));
  }

  async requeueDeadLetter(deadLetterQueue: string, sourceQueue: string, id: string): Promise<boolean> {
    await this.ensureSchema();
    const r = await this.client.query(this.sql.requeueDeadLetter, [deadLetterQueue, sourceQueue, id]);
    return r.rowCount > 0;
  }

  async deleteDeadLetter(deadLetterQueue: string, sourceQueue: string, id: string): Promise<boolean> {
    await this.ensureSchema();
    const r = await this.client.query(this.sql.deleteDeadLetter, [deadLetterQueue, sourceQueue, id]);
    return r.rowCount > 0;
  }

  async claimOutlook(queue: string, limits?: QueueLimits): Promise<ClaimOutlook> {
    await this.ensureSchema();
    if (hasLimits(limits)) {
      const text = (this.limitedOutlook ??= pgLimitedOutlookStatement(this.names));
      const r = await this.client.query<LimitedOutlookRow>(text, [queue, limits.concurrency ?? null, limits.ratePerSecond ?? null, bucketSize(limits)]);
      return limitedOutlookOf(r.rows[0], limits);
    }
    const r = await this.client.query<{ due: boolean; lease_lapses_in_ms: number | null; resumes_in_ms: number | null }>((this.outlook ??= pgClaimOutlookStatement(this.names)), [queue]);
    const row = r.rows[0];
    const resumes = row?.due || row?.resumes_in_ms == null ? null : Math.max(0, Math.ceil(Number(row.resumes_in_ms)));
    return { due: row?.due === true, leaseLapsesInMs: row?.due || row?.lease_lapses_in_ms == null ? null : Number(row.lease_lapses_in_ms), ...(resumes === null ? {} : { resumesInMs: resumes }) };
  }
  private outlook: string | undefined;
  private limitedOutlook: string | undefined;

  async listWaiting(query: WaitingQuery): Promise<WaitingJob[]> {
    const top = Math.floor(query.top);
    if (!(top > 0)) return [];
    await this.ensureSchema();
    const text = (this.waiting ??= pgWaitingStatements(this.names))[`${query.state}:${query.order}`];
    const r = await this.client.query<{ id: string; payload_json: string; headers_json: string; attempts: number; available_at: Date; created_at: Date }>(text, [
      query.queue,
      top,
    ]);
    return r.rows.map((row) => ({
      id: row.id,
      payloadJson: row.payload_json,
      headers: parseHeadersLenient(row.headers_json),
      attempts: Number(row.attempts),
      availableAt: row.available_at,
      createdAt: row.created_at,
    }));
  }
  private waiting: PgWaitingStatements | undefined;

  async hasMessage(queue: string, id: string): Promise<boolean> {
    await this.ensureSchema();
    const r = await this.client.query<{ present: boolean }>(this.sql.hasMessage, [queue, id]);
    return r.rows[0]!.present;
  }

  async now(): Promise<Date> {
    const r = await this.client.query<{ now: Date }>(this.sql.now);
    return r.rows[0]!.now;
  }

  close(): Promise<void> {
    return this.client.close();
  }
}

/** PGlite runs one statement per prepared query; our DDL scripts separate statements with ";\n". */
function splitStatements(script: string): string[] {
  return script
    .split(/;\s*\n/)
    .map((s) => s.trim().replace(/;$/, ''))
    .filter((s) => s !== '');
}
