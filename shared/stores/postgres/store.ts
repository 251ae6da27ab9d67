import { createHash, randomInt, randomUUID } from 'node:crypto';
import { transportNames, type TransportNames } from '../../sql/identifiers';
import { jsonbSafe, parseHeadersLenient } from '../../transport/headers';
import type {
  AckAndTake,
  ClaimedMessage,
  ClaimOutlook,
  DeadLetterItem,
  DeadLetterMove,
  HandoverRequest,
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
import type { PgClient, Queryable } from './client';
import { pgDedupDdl, pgDedupStatements, type PgDedupStatements } from './dedup-statements';
import { dedupRounds } from '../../transport/dedup';
import {
  addPriorityColumnSql,
  advisoryKey,
  createIndexesSql,
  createTableSql,
  inspectTransportTable,
  schemaLockResource,
  tableLockResource,
} from './ddl';
import { subscriptionsTableName } from '../schema-names';
import { historyNames } from '../history-names';
import { notifyPrefix, pgStatements, type PgStatements } from './statements';
import { pgTopicStatements, type PgTopicStatements } from './topic-statements';
import { pgClaimOutlookStatement, pgLimitedOutlookStatement } from './outlook-statements';
import { pgJobControlStatements, pgQueueStateTableDdl, type PgJobControlStatements } from './job-control-statements';
import { dedupTableName, queueStateTableName } from '../queue-state-names';
import type { CancelOutcome, QueueState, RenewResult, RescheduleOutcome, RescheduleTime } from '../../transport/job-control';
import { pgWaitingStatements, type PgWaitingStatements } from './waiting-statements';
import { pgLeaseRosterDdl, pgLimitColumnsDdl, pgLimitedClaimRoutineDdl, pgLimitStatements, qualifiedLeaseRoster, type PgLimitStatements } from './limit-statements';
import { pgClaimRoutineDdl, pgClaimRoutineExists } from './claim-routine';
import { bucketSize, hasLimits, type LimitedClaim, type QueueLimits } from '../../transport/limits';
import { limitedClaimOf, limitedOutlookOf, type LimitedOutlookRow } from '../limited-claim';
import type { WaitingJob, WaitingQuery } from '../../transport/waiting';
import type { HistoryPage, HistoryQuery, JobRecord } from '../../transport/history';
import { historyPage, readJob, searchKey, type HistoryRowShape } from '../../transport/history-rows';
import { pgHistoryDdl, pgHistoryJobFieldsDdl, pgHistoryStatements, type PgHistoryStatements } from './history-statements';
import { ORDERING_KEY_COLUMN, pgOrderingColumnDdl } from './ordering-sql';
import { pgKeyNextIndexDdl, pgKeysBacklogDdl, pgReadySetBackfill, pgReadySetDdl } from './ready-set';

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
  /** epoch ms (CLAIM_TIMES) */
  created_ms: number;
  available_ms: number;
  priority: number;
  ordering_key: string | null;
  /** bigint as text; NULL for a row published before the ready set (PostgreSQL version 18) */
  seq: string | null;
}

/** A keyed publish lost a race for its id to a concurrent insert (statements.ts publish): run it again. */
const UNIQUE_VIOLATION = '23505';
const KEYED_PUBLISH_ATTEMPTS = 5;

/** Serves a PostgreSQL server (pg Pool) and the embedded PGlite alike. */
export class PostgresTransportStore implements TransportStore {
  readonly kind: StoreKind;
  readonly names: TransportNames;
  private readonly sql: PgStatements;
  private readonly topicSql: PgTopicStatements;
  private readonly controlSql: PgJobControlStatements;
  private readonly dedupSql: PgDedupStatements;
  private readonly queueStateTable: string;
  private readonly historySql: PgHistoryStatements;
  private readonly historyPrepared: string;
  /** Prepared-statement names, derived from the text so two stores sharing a pool never clash. */
  private readonly prepared: Record<keyof PgStatements, string>;
  private ready = false;
  private attempt?: Promise<void>;
  private retryAfter = 0;
  private retryCause?: Error;
  private warned = false;
  /** The schema has the claim routine (version 25): claims call it; without it they send the statement itself. */
  private claimByRoutine = false;

  constructor(
    private readonly client: PgClient,
    private readonly options: TransportStoreOptions,
  ) {
    this.kind = client.kind;
    this.names = transportNames(options.schema, options.table, 'postgres');
    this.sql = pgStatements(this.names, { asyncCommit: !options.durableClaimsAndAcks });
    this.topicSql = pgTopicStatements(this.names, subscriptionsTableName(this.names, 'postgres'));
    this.queueStateTable = queueStateTableName(this.names, 'postgres');
    this.controlSql = pgJobControlStatements(this.names, this.queueStateTable);
    this.dedupSql = pgDedupStatements(this.names);
    this.historySql = pgHistoryStatements(this.names, { asyncCommit: !options.durableClaimsAndAcks });
    this.historyPrepared = `ar_${createHash('sha1').update(this.historySql.ackToHistory).digest('hex').slice(0, 24)}`;
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
          await tx.query(addPriorityColumnSql(n));
          await tx.query(pgOrderingColumnDdl(n));
          for (const stmt of [...pgReadySetDdl(n), ...pgKeysBacklogDdl(n)]) await tx.query(stmt.text);
          await tx.query(pgLimitedClaimRoutineDdl(n));
          await tx.query(pgClaimRoutineDdl(n));
        });
        state = await inspectTransportTable(this.client, n);
      }
      if (state.exists && state.missingPriority) {
        // a table from before priorities (PostgreSQL version 12 adds the column to migrated schemas): metadata only, brief lock
        await this.client.transaction(async (tx) => {
          await tx.query(`SET LOCAL lock_timeout = '5s'`);
          await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [advisoryKey(schemaLockResource(n.schema))]);
          await tx.query(addPriorityColumnSql(n));
        });
        state = await inspectTransportTable(this.client, n);
      }
      if (state.exists && state.missingReadySet) {
        // a table from before the ready set (PostgreSQL version 18 files migrated schemas): catalog-only columns, then
        // the existing rows filed (keyed, delayed and dead-letter rows only), under the schema lock
        await this.client.transaction(async (tx) => {
          await tx.query(`SET LOCAL lock_timeout = '5s'`);
          await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [advisoryKey(schemaLockResource(n.schema))]);
          await tx.query(pgOrderingColumnDdl(n));
          for (const stmt of [...pgReadySetDdl(n), ...pgReadySetBackfill(n), ...pgKeysBacklogDdl(n)]) await tx.query(stmt.text);
          await tx.query(pgLimitedClaimRoutineDdl(n));
          await tx.query(pgClaimRoutineDdl(n));
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
    if (this.options.autoCreateSchema && state.exists) await this.ensureHistoryTable();
    if (this.options.autoCreateSchema && state.exists && state.problems.length === 0) await this.ensureOrderingKey();
    else if (state.exists) {
      const ordering = await this.orderingKeyState();
      if (!ordering.column) {
        state.problems.push(
          `table ${n.schema}.${n.table} has no column 'ordering_key' (PostgreSQL schema version 13): run \`npm run schema -- apply\` or set AUTO_CREATE_SCHEMA=true`,
        );
      } else if (!ordering.index) {
        state.warnings.push(`table ${n.schema}.${n.table} has no key next index (or no key numbers), so a statement that promotes a key's next job reads the key's rows. Run \`npm run schema -- apply\` (schema version 23): ${pgKeyNextIndexDdl(n)}`);
      }
    }
    if (!state.exists) {
      throw new Error(
        `the transport table ${n.schema}.${n.table} does not exist. Run \`npm run schema -- apply\` (or print the DDL with ` +
          '`npm run schema -- print --dialect postgres`), or set AUTO_CREATE_SCHEMA=true.',
      );
    }
    if (state.problems.length > 0) throw new Error(`the transport table does not have the expected shape:\n- ${state.problems.join('\n- ')}`);
    this.claimByRoutine = this.options.autoCreateSchema ? await this.ensureClaimRoutine() : await this.hasClaimRoutine();
    if (!this.claimByRoutine) {
      state.warnings.push(
        `schema ${n.schema} has no claim routine (PostgreSQL schema version 25), so each claim is planned anew (about 0.8 ms of the server's CPU). ` +
          'Run `npm run schema -- apply`.',
      );
    }
    if (state.warnings.length > 0 && !this.warned) {
      this.warned = true;
      for (const w of state.warnings) this.options.logger.warn(w);
    }
    this.ready = true;
  }

  private async hasClaimRoutine(): Promise<boolean> {
    const probe = pgClaimRoutineExists(this.names);
    const r = await this.client.query<{ present: boolean }>(probe.text, probe.values);
    return r.rows[0]?.present === true;
  }

  /** Version 25's routines (claim-routine.ts) on a table this store created under an earlier release, under the schema lock. */
  private async ensureClaimRoutine(): Promise<boolean> {
    if (await this.hasClaimRoutine()) return true;
    const n = this.names;
    await this.client.transaction(async (tx) => {
      await tx.query(`SET LOCAL lock_timeout = '60s'`);
      await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [advisoryKey(schemaLockResource(n.schema))]);
      await tx.query(pgClaimRoutineDdl(n));
      await tx.query(pgLimitedClaimRoutineDdl(n));
    });
    return true;
  }

  /**
   * The claim reads the queue-state table (pause), a keyed publish the dedup table and a limited claim the lease
   * roster, so a store that creates its own table creates those too (migrations 7, 8, 10 and 15 do the same for
   * migrated schemas); under the schema lock, as a
   * no-op when they are there.
   */
  private async ensureQueueStateTable(): Promise<void> {
    const n = this.names;
    const present = await this.client.query<{ present: boolean }>(
      `SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL AND to_regclass($5) IS NOT NULL
         AND EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = $3 AND table_name = $4 AND column_name = 'backoff_until') AS present`,
      [`"${n.schema}"."${this.queueStateTable}"`, `"${n.schema}"."${dedupTableName(n, 'postgres')}"`, n.schema, this.queueStateTable, qualifiedLeaseRoster(n)],
    );
    if (present.rows[0]?.present) return;
    await this.client.transaction(async (tx) => {
      await tx.query(`SET LOCAL lock_timeout = '60s'`);
      await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [advisoryKey(schemaLockResource(n.schema))]);
      await tx.query(pgQueueStateTableDdl(n.schema, this.queueStateTable));
      // the limit and backoff columns (migration 10 adds them to migrated schemas)
      await tx.query(pgLimitColumnsDdl(n.schema, this.queueStateTable));
      await tx.query(pgLeaseRosterDdl(n)); // migration 15's table: limited claims count leases there
      for (const stmt of pgDedupDdl(n)) await tx.query(stmt.text);
    });
  }

  private async orderingKeyState(): Promise<{ column: boolean; index: boolean }> {
    const r = await this.client.query<{ column: boolean; index: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name = '${ORDERING_KEY_COLUMN}') AS column,
         to_regclass($3) IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = $4 AND column_name = 'pending') AS index`,
      [this.names.schema, this.names.table, `"${this.names.schema}"."${this.names.keyNextIndex}"`, this.names.keysTable],
    );
    return { column: r.rows[0]?.column === true, index: r.rows[0]?.index === true };
  }

  /**
   * The ordering-key column (PostgreSQL version 13 for migrated schemas), the keys' backlog, numbers and indexes
   * (version 23), under the schema lock.
   */
  private async ensureOrderingKey(): Promise<void> {
    const present = await this.orderingKeyState();
    if (present.column && present.index) return;
    const n = this.names;
    await this.client.transaction(async (tx) => {
      await tx.query(`SET LOCAL lock_timeout = '60s'`);
      await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [advisoryKey(schemaLockResource(n.schema))]);
      await tx.query(pgOrderingColumnDdl(n));
      for (const stmt of pgKeysBacklogDdl(n)) await tx.query(stmt.text);
      await tx.query(pgLimitedClaimRoutineDdl(n));
      await tx.query(pgClaimRoutineDdl(n));
    });
  }

  /** The job-history table, its indexes and its job-field columns (migrations 9 and 17), under the schema lock, as a no-op when there. */
  private async ensureHistoryTable(): Promise<void> {
    const n = this.names;
    const ddl = pgHistoryDdl(n);
    const present = await this.client.query<{ present: boolean }>(
      `SELECT count(*) = $2 AND EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = $4 AND column_name = 'ordering_key') AS present
       FROM pg_class AS c JOIN pg_namespace AS s ON s.oid = c.relnamespace WHERE s.nspname = $1 AND c.relname = ANY($3::text[])`,
      [n.schema, ddl.length, Object.values(historyNames(n, 'postgres')), historyNames(n, 'postgres').table],
    );
    if (present.rows[0]?.present) return;
    await this.client.transaction(async (tx) => {
      await tx.query(`SET LOCAL lock_timeout = '60s'`);
      await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [advisoryKey(schemaLockResource(n.schema))]);
      for (const s of ddl) await tx.query(s.text);
      await tx.query(pgHistoryJobFieldsDdl(n)); // migration 17's columns
    });
  }

  async publish(messages: readonly OutgoingMessage[]): Promise<PublishOutcome[]> {
    if (messages.length === 0) return [];
    await this.ensureSchema();
    if (!messages.some((m) => m.dedup)) return this.insertMessages(this.client, messages);
    const outcomes: PublishOutcome[] = new Array(messages.length);
    for (const round of dedupRounds(messages)) {
      const plain = round.filter((r) => !r.message.dedup);
      const keyed = round.filter((r) => r.message.dedup);
      if (plain.length > 0) (await this.insertMessages(this.client, plain.map((r) => r.message))).forEach((o, i) => (outcomes[plain[i]!.index] = o));
      if (keyed.length > 0) {
        const done = await this.client.transaction((tx) => this.publishKeyed(tx, keyed.map((r) => r.message)));
        done.forEach((o, i) => (outcomes[keyed[i]!.index] = o));
      }
    }
    return outcomes;
  }

  /**
   * Insert-if-absent of every message in one statement; duplicates answered from the stored rows. An id given twice
   * in one batch is inserted once (its first occurrence), the others answered as its duplicates. A keyed row that
   * lost a race for its id fails the statement (see the publish statement), which then runs again.
   */
  private async insertMessages(q: Queryable, messages: readonly OutgoingMessage[], inTransaction = false): Promise<PublishOutcome[]> {
    if (messages.length === 0) return [];
    const seen = new Set<string>();
    const firsts = messages.filter((m) => !seen.has(m.id.toLowerCase()) && seen.add(m.id.toLowerCase()));
    if (!firsts.some((m) => m.orderingKey !== undefined)) return this.insertOnce(q, firsts, messages);
    // inside a transaction a failed statement would abort it: the retry needs a savepoint
    for (let attempt = 1; ; attempt++) {
      if (inTransaction) await q.query('SAVEPOINT ar_keyed_publish');
      try {
        const outcomes = await this.insertOnce(q, firsts, messages);
        if (inTransaction) await q.query('RELEASE SAVEPOINT ar_keyed_publish');
        return outcomes;
      } catch (err) {
        if (inTransaction) await q.query('ROLLBACK TO SAVEPOINT ar_keyed_publish');
        if ((err as { code?: string }).code !== UNIQUE_VIOLATION || attempt >= KEYED_PUBLISH_ATTEMPTS) throw err;
      }
    }
  }

  private async insertOnce(q: Queryable, firsts: readonly OutgoingMessage[], messages: readonly OutgoingMessage[]): Promise<PublishOutcome[]> {
    const inserted = await q.query<{ id: string; available_at: Date }>(this.sql.publish, [
      firsts.map((m) => m.id),
      firsts.map((m) => m.queue),
      firsts.map((m) => m.payloadJson),
      firsts.map((m) => JSON.stringify(m.headers)),
      firsts.map((m) => Math.max(0, Math.round(m.delayMs))),
      notifyPrefix(this.names),
      firsts.map((m) => m.priority ?? 0),
      firsts.map((m) => m.orderingKey ?? null),
    ], this.prepared.publish);
    const byId = new Map(inserted.rows.map((r) => [r.id, r.available_at]));
    const existing = await this.storedRows(q, messages.filter((m) => !byId.has(m.id.toLowerCase())).map((m) => m.id));
    return messages.map((m) => {
      const id = m.id.toLowerCase();
      const at = byId.get(id);
      if (at) return { id, inserted: true, availableAt: at };
      return duplicateOf(id, existing);
    });
  }

  private async storedRows(q: Queryable, ids: readonly string[]): Promise<Map<string, { available_at: Date; queue: string }>> {
    const existing = new Map<string, { available_at: Date; queue: string }>();
    if (ids.length === 0) return existing;
    const rows = await q.query<{ id: string; available_at: Date; queue: string }>(this.sql.existing, [ids]);
    for (const r of rows.rows) existing.set(r.id, r);
    return existing;
  }

  /**
   * Messages with dedup keys, no key twice (dedupRounds), inside one transaction: hold the keys, debounce the
   * holders that still wait, hand keys whose holder was claimed to the new job, insert the jobs that took a key.
   */
  private async publishKeyed(tx: Queryable, messages: readonly OutgoingMessage[]): Promise<PublishOutcome[]> {
    const keyOf = (queue: string, key: string) => JSON.stringify([queue, key]);
    const held = await tx.query<{ queue: string; dedup_key: string; job_id: string }>(this.dedupSql.holdKeys, [
      messages.map((m) => m.queue),
      messages.map((m) => m.dedup!.key),
      messages.map((m) => m.id),
      messages.map((m) => m.dedup!.windowMs),
    ]);
    const holder = new Map(held.rows.map((r) => [keyOf(r.queue, r.dedup_key), r.job_id]));
    const plan = messages.map((m) => {
      const h = holder.get(keyOf(m.queue, m.dedup!.key)) ?? m.id.toLowerCase();
      return { m, holder: h, took: h === m.id.toLowerCase() };
    });
    const debounce = plan.filter((p) => !p.took && p.m.dedup!.mode === 'debounce');
    const replaced = new Map<string, Date>();
    if (debounce.length > 0) {
      const r = await tx.query<{ id: string; available_at: Date }>(this.dedupSql.replaceWaiting, [
        debounce.map((p) => p.holder),
        debounce.map((p) => p.m.queue),
        debounce.map((p) => p.m.payloadJson),
        debounce.map((p) => JSON.stringify(p.m.headers)),
        debounce.map((p) => Math.max(0, Math.round(p.m.delayMs))),
        notifyPrefix(this.names),
      ]);
      for (const row of r.rows) replaced.set(row.id, row.available_at);
      // a replaced job's window restarts; a holder that was claimed (or is gone) hands its key to the new job
      for (const p of debounce) if (!replaced.has(p.holder)) (p.holder = p.m.id.toLowerCase()), (p.took = true);
      await tx.query(this.dedupSql.retake, [
        debounce.map((p) => p.m.queue),
        debounce.map((p) => p.m.dedup!.key),
        debounce.map((p) => p.holder),
        debounce.map((p) => p.m.dedup!.windowMs),
      ]);
    }
    const taking = plan.filter((p) => p.took).map((p) => p.m);
    const inserted = new Map((await this.insertMessages(tx, taking, true)).map((o, i) => [taking[i]!, o]));
    const elsewhere = taking.filter((m) => inserted.get(m)?.existingQueue !== undefined && inserted.get(m)?.existingQueue !== m.queue);
    if (elsewhere.length > 0) {
      await tx.query(this.dedupSql.releaseKeys, [elsewhere.map((m) => m.queue), elsewhere.map((m) => m.dedup!.key), elsewhere.map((m) => m.id)]);
    }
    const existing = await this.storedRows(tx, plan.filter((p) => !p.took && !replaced.has(p.holder)).map((p) => p.holder));
    return plan.map((p) => {
      const own = inserted.get(p.m);
      if (own) return own;
      const at = replaced.get(p.holder);
      if (at) return { id: p.holder, inserted: false, availableAt: at, existingQueue: p.m.queue, debounced: true };
      return duplicateOf(p.holder, existing);
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
      messages.map((m) => m.priority ?? 0),
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
    const values = [queue, max, Math.round(lockTimeoutMs), lockId];
    const r = this.claimByRoutine
      ? await this.client.query<ClaimRow>(this.sql.claimCall, values, this.prepared.claimCall)
      : await this.client.query<ClaimRow>(this.sql.claim, values, this.prepared.claim);
    return this.toClaimed(r.rows);
  }

  /** RETURNING has no order: the claim order again (seq breaks ties; rows from before version 18 have none). */
  private toClaimed(rows: ClaimRow[]): ClaimedMessage[] {
    const seq = (r: ClaimRow) => (r.seq === null ? -1 : Number(r.seq));
    return rows
      .sort((a, b) => b.priority - a.priority || a.available_ms - b.available_ms || seq(a) - seq(b) || a.created_ms - b.created_ms)
      .map((row) => ({
        id: row.id,
        lockId: row.lock_id,
        queue: row.queue,
        payloadJson: row.payload_json,
        headers: parseHeadersLenient(row.headers_json),
        attempt: row.attempts,
        createdAt: new Date(row.created_ms),
        priority: Number(row.priority),
        ...(row.ordering_key == null ? {} : { orderingKey: row.ordering_key }),
      }));
  }

  /**
   * A limited queue's claim (transport/limits.ts): one short transaction that locks the queue's state row, then
   * claims at most the room its limits leave (limit-statements.ts). The rows carry `lockId` like any claim.
   */
  async claimLimited(queue: string, max: number, lockTimeoutMs: number, lockId: string, limits: QueueLimits): Promise<LimitedClaim<ClaimedMessage>> {
    await this.ensureSchema();
    const sql = (this.limitSql ??= pgLimitStatements(this.names, { asyncCommit: !this.options.durableClaimsAndAcks }));
    const values = [queue, Math.max(0, Math.floor(max)), Math.round(lockTimeoutMs), lockId, limits.concurrency ?? null, limits.ratePerSecond ?? null, bucketSize(limits)];
    // one round trip: the routine takes the queue-state row's lock and claims (limit-statements.ts)
    const r = await this.client.query<ClaimRow & LimitStateRow>(sql.claimCall, values);
    const jobs = r.rows.filter((row) => row.kind === 'job');
    return limitedClaimOf(this.toClaimed(jobs), r.rows.find((row) => row.kind === 'state'), max, limits);
  }
  private limitSql: PgLimitStatements | undefined;

  async backOffQueue(queue: string, delayMs: number): Promise<Date> {
    await this.ensureSchema();
    const sql = (this.limitSql ??= pgLimitStatements(this.names, { asyncCommit: !this.options.durableClaimsAndAcks }));
    const r = await this.client.query<{ backoff_until: Date }>(sql.backOff, [queue, Math.max(0, Math.round(delayMs))]);
    return r.rows[0]!.backoff_until;
  }

  async ack(settlements: readonly Settlement[]): Promise<number> {
    if (settlements.length === 0) return 0;
    await this.ensureSchema();
    const values = [settlements.map((s) => s.id), settlements.map((s) => s.lockId)];
    // Claimed messages say whether their row has an ordering key; a batch of rows without one takes the DELETE
    // alone. Any settlement it did not match (a keyed row after all, a lost lease) is sent through the full ack,
    // which settles keys: the fence makes the rows the first statement deleted match nothing there.
    if (settlements.every(claimedUnkeyed)) {
      const lean = await this.client.query(this.sql.ackUnkeyed, values, this.prepared.ackUnkeyed);
      if (lean.rowCount === settlements.length) return lean.rowCount;
      return (lean.rowCount ?? 0) + (await this.ack(settlements.map(({ id, lockId }) => ({ id, lockId }))));
    }
    const r = await this.client.query<{ n: number }>(this.sql.ack, values, this.prepared.ack);
    return r.rows[0]?.n ?? 0;
  }

  async ackAndTakeNext(settlements: readonly Settlement[], take: HandoverRequest): Promise<AckAndTake> {
    if (settlements.length === 0) return { acked: 0, taken: [], left: 0 };
    await this.ensureSchema();
    const values = [settlements.map((s) => s.id), settlements.map((s) => s.lockId), take.queue, Math.max(0, Math.floor(take.max)), Math.round(take.lockTimeoutMs), take.lockId];
    const r = await this.client.query<{ n: number; left: number } & ClaimRow>(this.sql.ackTake, values, this.prepared.ackTake);
    return { acked: r.rows[0]?.n ?? 0, taken: this.toClaimed(r.rows.filter((row) => row.id !== null)), left: r.rows[0]?.left ?? 0 };
  }

  async ackToHistory(settlements: readonly Settlement[]): Promise<number> {
    if (settlements.length === 0) return 0;
    await this.ensureSchema();
    const r = await this.client.query<{ n: number }>(this.historySql.ackToHistory, [settlements.map((s) => s.id), settlements.map((s) => s.lockId)], this.historyPrepared);
    return r.rows[0]?.n ?? 0;
  }

  async findJob(id: string, deadLetterQueue: string): Promise<JobRecord | null> {
    await this.ensureSchema();
    const r = await this.client.query<{
      source: 'queue' | 'history';
      id: string;
      queue: string;
      attempts: number;
      headers_json: string;
      created_at: Date;
      available_at: Date;
      completed_at: Date | null;
      leased: boolean;
      delayed: boolean;
      dead_letter_reason: string | null;
      priority: number | null;
      ordering_key: string | null;
    }>(this.historySql.findJob, [id]);
    return readJob(
      r.rows.map((x) => ({
        source: x.source,
        id: x.id,
        queue: x.queue,
        attempts: Number(x.attempts),
        headers: parseHeadersLenient(x.headers_json),
        createdAt: x.created_at,
        availableAt: x.available_at,
        completedAt: x.completed_at,
        leased: x.leased,
        delayed: x.delayed,
        deadLetterReason: x.dead_letter_reason,
        ...(x.priority === null ? {} : { priority: Number(x.priority) }),
        orderingKey: x.ordering_key,
      })),
      deadLetterQueue,
    );
  }

  async searchHistory(query: HistoryQuery): Promise<HistoryPage> {
    const top = Math.floor(query.top);
    if (!(top > 0)) return { items: [] };
    await this.ensureSchema();
    const { byQueue, key } = searchKey(query);
    const r = await this.client.query<HistoryRowShape>(byQueue ? this.historySql.searchByQueue : this.historySql.searchByCorrelation, [
      key,
      query.since ?? '-infinity',
      query.until ?? 'infinity',
      query.after?.completedAt ?? 'infinity',
      query.after?.id ?? 'ffffffff-ffff-ffff-ffff-ffffffffffff',
      query.state ?? null,
      top,
    ]);
    return historyPage(r.rows, top);
  }

  async pruneHistoryBatch(queue: string, retentionMs: number): Promise<number> {
    await this.ensureSchema();
    const r = await this.client.query(this.historySql.prune, [queue, Math.round(retentionMs)]);
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

  async pruneDedupKeys(): Promise<number> {
    await this.ensureSchema();
    const r = await this.client.query(this.dedupSql.prune);
    return r.rowCount;
  }

  async pruneDeadLetterBatch(deadLetterQueue: string, retentionMs: number): Promise<number> {
    await this.ensureSchema();
    const r = await this.client.query(this.sql.pruneDeadLetters, [deadLetterQueue, Math.round(retentionMs)]);
    return r.rowCount;
  }

  async queueNames(max: number): Promise<string[]> {
    const n = Math.floor(max);
    if (!(n > 0)) return [];
    await this.ensureSchema();
    const r = await this.client.query<{ queue: string }>(this.sql.queueNames, [n]);
    return r.rows.map((row) => row.queue);
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
    const r = await this.client.query<{ id: string; payload_json: string; headers_json: string; attempts: number; available_at: Date; created_at: Date; priority: number; ordering_key: string | null }>(text, [
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
      priority: Number(row.priority),
      ...(row.ordering_key === null ? {} : { orderingKey: row.ordering_key }),
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

function duplicateOf(id: string, stored: Map<string, { available_at: Date; queue: string }>): PublishOutcome {
  const row = stored.get(id);
  return row ? { id, inserted: false, availableAt: row.available_at, existingQueue: row.queue } : { id, inserted: false, availableAt: null };
}

/** PGlite runs one statement per prepared query; our DDL scripts separate statements with ";\n". */
function splitStatements(script: string): string[] {
  return script
    .split(/;\s*\n/)
    .map((s) => s.trim().replace(/;$/, ''))
    .filter((s) => s !== '');
}

/** A settlement that is a message a claim returned (it carries its queue) whose row has no ordering key. */
function claimedUnkeyed(s: Settlement): boolean {
  const m = s as Partial<ClaimedMessage>;
  return typeof m.queue === 'string' && m.orderingKey === undefined;
}
