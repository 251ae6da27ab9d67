// The SQL Server channel store: the ChannelStore port over one mssql pool — usually the pool the transport
// store also uses (open.ts), reached through the pool's PoolHolder (pool-guard.ts) so a rebuild after a refused
// login serves both stores; close() leaves the pool alone unless the store owns it. Statement text lives in
// channel-statements.ts, catalog rules in channel-verify.ts, the pool and schema plumbing shared with the
// transport store in store-common.ts; this file binds parameters, maps rows and runs the schema step.

import type * as sql from 'mssql';
import type {
  CallbackJobTarget,
  ChannelMessage,
  ChannelNames,
  ChannelStats,
  ChannelStore,
  ChannelTable,
  DbTimestamp,
  InsertedMessage,
  OverdueMessage,
  Registration,
  SubscriptionStart,
} from '../../channel/types';
import { CALLBACK_QUEUE } from '../../queue-names';
import type { Logger } from '../../log';
import { DEFAULT_TRANSPORT_TABLE } from '../options';
import { channelStatements, HEARTBEAT_CHUNK, HYDRATE_CHUNK, type ChannelStatements } from './channel-statements';
import { channelStats } from './channel-stats';
import {
  CHANNEL_VERIFICATION_FIX_HINT,
  channelAbsentMessage,
  evaluateChannelCatalog,
  readChannelCatalog,
} from './channel-verify';
import type { PoolHolder } from './pool-guard';
import { compareSqlServerGuids, lower, rows, SqlServerStoreBase, type Row } from './store-common';

export interface SqlServerChannelStoreOptions {
  names: ChannelNames;
  /** true: create the schema, tables, sequence and indexes under the schema applock; false: verify only. */
  autoCreateSchema: boolean;
  logger: Logger;
  /** true: close() closes the pool. Default false: the pool is shared with the transport store. */
  ownsPool?: boolean;
  /** Where routing enqueues callback jobs (default: the default transport table in the same schema). */
  callbacks?: CallbackJobTarget;
  /** The schema-version check (schema-gate.ts) run before the channel's own create-or-verify. */
  schemaGate?: () => Promise<void>;
  /** Test harness only (see TransportStoreOptions.verifyCatalog): false skips the catalog verification. */
  verifyCatalog?: boolean;
}

/** Spec MaxPersistenceTtl: 3650 days, also where the ms-split DATEADD stays exact. */
export const MAX_CHANNEL_TTL_MS = 3650 * 24 * 60 * 60 * 1000;
const MAX_INT = 2_147_483_647;
const INSERT_DUPLICATE_RACE_ATTEMPTS = 3;
/**
 * Style 121 text of a datetime2 (what the store hands out, UTC without a zone), or ISO 8601 with a 'T';
 * 0–7 fraction digits; an explicit UTC designator (Z, +00, +00:00) is accepted and dropped.
 */
const DB_TIMESTAMP = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2}(?:\.\d{1,7})?)(?:Z|[+-]00(?::?00)?)?$/i;
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The first row of the first non-empty result set (for batches whose answer may come from either branch). */
function firstRowOfAnySet(result: sql.IResult<unknown>): Row | undefined {
  const sets = (result.recordsets as unknown as Row[][] | undefined) ?? [];
  for (const set of sets) if (set.length > 0) return set[0];
  return undefined;
}

/** A non-negative duration in whole milliseconds, at most 3650 days (the DATEADD split is exact up to there). */
export function durationMs(value: number, what: string): number {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${what} must be a non-negative number of milliseconds, not ${value}`);
  if (value > MAX_CHANNEL_TTL_MS) throw new RangeError(`${what} of ${value} ms exceeds the 3650-day maximum`);
  return Math.ceil(value);
}

function limitOf(limit: number): number {
  const n = Math.floor(limit);
  return n > 0 ? Math.min(n, MAX_INT) : 0;
}

/** A DbTimestamp as the parameter text CONVERT(datetime2(7), @p, 121) reads; rejects anything else. */
export function dbTimestampParam(value: DbTimestamp, what: string): string {
  const match = typeof value === 'string' ? DB_TIMESTAMP.exec(value) : null;
  if (!match) {
    throw new TypeError(
      `${what} '${String(value)}' is not a UTC timestamp this store can read ('yyyy-mm-dd hh:mi:ss.fffffff', as it hands them out)`,
    );
  }
  return `${match[1]} ${match[2]}`;
}

function sequenceParam(value: string, what: string): string {
  if (typeof value !== 'string' || !/^-?\d{1,19}$/.test(value)) throw new TypeError(`${what} '${String(value)}' is not a bigint`);
  return value;
}

function seqText(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

export { compareSqlServerGuids, sqlServerGuidKey } from './store-common';

function toMessage(row: Row): ChannelMessage {
  return {
    id: lower(row.id),
    correlationId: String(row.correlation_id),
    envelopeJson: row.envelope_json === null || row.envelope_json === undefined ? null : String(row.envelope_json),
    // tedious keeps the sub-millisecond ticks in the Date's non-enumerable nanosecondsDelta; exact text below
    createdAt: row.created_at as Date,
    createdAtExact: String(row.created_at_exact),
    ackedAt: (row.acked_at as Date | null | undefined) ?? null,
    ackedSeq: seqText(row.acked_seq),
    recoveryClaimed: row.recovery_claimed === true || row.recovery_claimed === 1,
  };
}

export class SqlServerChannelStore extends SqlServerStoreBase implements ChannelStore {
  readonly kind = 'sqlserver' as const;
  readonly names: ChannelNames;
  private readonly statements: ChannelStatements;
  private readonly options: SqlServerChannelStoreOptions;
  private readonly callbacks: CallbackJobTarget;

  /** `pool`'s holder is usually shared with the transport store, so one rebuild serves both. */
  constructor(pool: sql.ConnectionPool | PoolHolder, options: SqlServerChannelStoreOptions) {
    const callbacks = options.callbacks ?? { schema: options.names.schema, table: DEFAULT_TRANSPORT_TABLE, queue: CALLBACK_QUEUE };
    const statements = channelStatements(options.names, callbacks); // re-validates every name that reaches SQL text
    super(pool, options.logger, options.ownsPool ?? false);
    this.names = options.names;
    this.statements = statements;
    this.options = options;
    this.callbacks = callbacks;
  }

  // ---- schema (ensureSchema: store-common.ts) ------------------------------------------------------------

  /**
   * AutoCreate: the DDL batch (committed), then verification on a fresh request outside the transaction.
   * Operator path: verification only; objects not there yet throw a "does not exist" error and are checked
   * again by the next operation.
   */
  protected async runSchemaAttempt(): Promise<void> {
    await this.poolHolder.get();
    await this.options.schemaGate?.();
    const autoCreate = this.options.autoCreateSchema;
    // the whole channel DDL in one transaction under the schema applock
    if (autoCreate) await this.runDdlTransaction(this.statements.ddl);
    if (this.options.verifyCatalog === false) {
      this.schemaReady = true;
      return;
    }
    const result = evaluateChannelCatalog(await readChannelCatalog(this.pool, this.names), this.names, { autoCreate });
    for (const warning of result.warnings) this.logger.warn(warning);
    const problems = result.migration ? [...result.problems, result.migration] : result.problems;
    if (problems.length > 0) throw new Error(`${problems.join(' ')} ${CHANNEL_VERIFICATION_FIX_HINT}`);
    if (result.absent.length > 0) throw new Error(channelAbsentMessage(result.absent));
    this.schemaReady = true;
  }

  /** A failed DDL batch may be a name collision (another component's table, a view holding a name). */
  protected async collisionProblems(): Promise<string[]> {
    const catalog = await readChannelCatalog(this.pool, this.names);
    // operator mode: an object the failed batch did not get to create is not a collision
    return evaluateChannelCatalog(catalog, this.names, { autoCreate: false, skipIndexes: true }).problems;
  }

  // ---- recovery registrations ---------------------------------------------------------------------------

  async saveRegistration(correlationId: string, registrationId: string, stateJson: string, ttlMs: number, maxPerCorrelationId: number): Promise<Date | null> {
    const ttl = durationMs(ttlMs, 'registration TTL');
    await this.ensureSchema();
    const result = await this.run(this.statements.saveRegistration, {
      correlation_id: correlationId,
      registration_id: registrationId,
      state_json: stateJson,
      ttl_ms: ttl,
      max_registrations: limitOf(maxPerCorrelationId),
    });
    const row = firstRowOfAnySet(result);
    if (row === undefined) return null; // refused: the correlation id has its maximum of registrations
    if (!(row.expires_at instanceof Date)) throw new Error(`saving the registration ${registrationId} returned no expires_at`);
    return row.expires_at;
  }

  async loadRegistrations(correlationId: string): Promise<Registration[]> {
    await this.ensureSchema();
    const result = await this.run(this.statements.loadRegistrations, { correlation_id: correlationId });
    return rows(result).map((r) => ({
      correlationId: String(r.correlation_id),
      registrationId: lower(r.registration_id),
      stateJson: String(r.state_json),
      registeredAt: r.registered_at as Date,
      expiresAt: r.expires_at as Date,
    }));
  }

  async deleteRegistration(correlationId: string, registrationId: string): Promise<boolean> {
    await this.ensureSchema();
    const result = await this.run(this.statements.deleteRegistration, {
      correlation_id: correlationId,
      registration_id: registrationId,
    });
    return Number(rows(result)[0]?.affected ?? 0) > 0;
  }

  // ---- messages -----------------------------------------------------------------------------------------

  async insertMessage(id: string, correlationId: string, envelopeJson: string, retentionMs: number): Promise<InsertedMessage> {
    const retention = durationMs(retentionMs, 'message retention');
    await this.ensureSchema();
    const values = { id, correlation_id: correlationId, envelope_json: envelopeJson, retention_ms: retention };
    // a lost duplicate-key race rolls the INSERT back; the re-run reads the stored row as a duplicate
    const result = await this.runRetryingDuplicateKeyRace(
      this.statements.insertMessage,
      values,
      INSERT_DUPLICATE_RACE_ATTEMPTS,
      'channel insert lost a duplicate-key race; re-running the insert-if-absent',
    );
    const row = firstRowOfAnySet(result);
    if (!row) {
      throw new Error(
        `channel message ${id} already existed, but its row is gone (it expired and was pruned meanwhile); ` +
          'publish the response under a new id.',
      );
    }
    return {
      id: id.toLowerCase(),
      inserted: row.inserted === true || row.inserted === 1,
      correlationId: row.correlation_id === undefined ? correlationId : String(row.correlation_id),
      createdAt: row.created_at as Date,
      ackedAt: (row.acked_at as Date | null | undefined) ?? null,
      ackedSeq: seqText(row.acked_seq),
    };
  }

  async loadPending(
    correlationId: string,
    watermark: SubscriptionStart,
    limit: number,
    after?: { createdAtExact: DbTimestamp; id: string },
  ): Promise<ChannelMessage[]> {
    const top = limitOf(limit);
    if (top === 0) return [];
    const base = {
      limit: top,
      correlation_id: correlationId,
      started_at: dbTimestampParam(watermark.startedAt, 'watermark startedAt'),
      started_seq: sequenceParam(watermark.startedSeq, 'watermark startedSeq'),
    };
    if (after && !GUID.test(after.id)) throw new TypeError(`cursor id '${after.id}' is not a GUID`);
    const afterText = after ? dbTimestampParam(after.createdAtExact, 'cursor createdAtExact') : undefined;
    await this.ensureSchema();
    const result =
      after && afterText !== undefined
        ? await this.run(this.statements.loadPendingAfter, { ...base, after_created_at: afterText, after_id: after.id })
        : await this.run(this.statements.loadPendingFirst, base);
    return rows(result).map(toMessage);
  }

  async loadMessagesById(correlationId: string, ids: readonly string[]): Promise<ChannelMessage[]> {
    const unique = [...new Set(ids.map((id) => id.toLowerCase()))].filter((id) => GUID.test(id));
    if (unique.length === 0) return [];
    await this.ensureSchema();
    const out: ChannelMessage[] = [];
    for (let i = 0; i < unique.length; i += HYDRATE_CHUNK) {
      const chunk = unique.slice(i, i + HYDRATE_CHUNK);
      const result = await this.run(this.statements.loadMessagesById, { correlation_id: correlationId, ids: JSON.stringify(chunk) });
      out.push(...rows(result).map(toMessage));
    }
    if (unique.length > HYDRATE_CHUNK) {
      // each chunk came back in (created_at, id) order; merge them in the server's order
      out.sort((a, b) =>
        a.createdAtExact < b.createdAtExact ? -1 : a.createdAtExact > b.createdAtExact ? 1 : compareSqlServerGuids(a.id, b.id),
      );
    }
    return out;
  }

  async claimForDelivery(id: string, watermark: SubscriptionStart): Promise<boolean> {
    await this.ensureSchema();
    return (
      rows(
        await this.run(this.statements.claimForDelivery, {
          id,
          started_at: dbTimestampParam(watermark.startedAt, 'watermark startedAt'),
          started_seq: sequenceParam(watermark.startedSeq, 'watermark startedSeq'),
        }),
      ).length > 0
    );
  }

  async claimForRecovery(id: string): Promise<boolean> {
    await this.ensureSchema();
    return rows(await this.run(this.statements.claimForRecovery, { id })).length > 0;
  }

  async routeToCallbacks(id: string, correlationId: string, final: boolean): Promise<number | null> {
    await this.ensureSchema();
    const row = firstRowOfAnySet(await this.run(this.statements.routeToCallbacks, { id, correlation_id: correlationId, queue: this.callbacks.queue, final }));
    if (!row) throw new Error(`routing response ${id} returned no row`);
    return Number(row.claimed) === 1 ? Number(row.jobs) : null;
  }

  async holdForCallback(id: string, holdMs: number): Promise<string | null> {
    const hold = durationMs(holdMs, 'callback hold');
    await this.ensureSchema();
    const row = rows(await this.run(this.statements.holdForCallback, { id, hold_ms: hold }))[0];
    return row === undefined || row.envelope_json === null || row.envelope_json === undefined ? null : String(row.envelope_json);
  }

  async isAcknowledged(id: string): Promise<boolean> {
    await this.ensureSchema();
    const value = rows(await this.run(this.statements.isAcknowledged, { id }))[0]?.acknowledged;
    return value === true || value === 1;
  }

  async subscriptionStart(): Promise<SubscriptionStart> {
    await this.ensureSchema();
    const row = rows(await this.run(this.statements.subscriptionStart, {}))[0];
    if (!row) throw new Error('the subscription watermark query returned no row');
    return { startedAt: String(row.started_at), startedSeq: String(row.started_seq) };
  }

  async findOverdueWithRegistrations(olderThanMs: number, limit: number): Promise<OverdueMessage[]> {
    const top = limitOf(limit);
    if (top === 0) return [];
    const olderThan = durationMs(olderThanMs, 'overdue age');
    await this.ensureSchema();
    const result = await this.run(this.statements.findOverdueWithRegistrations, { limit: top, neg_older_than_ms: -olderThan });
    return rows(result).map((r) => ({
      id: lower(r.id),
      correlationId: String(r.correlation_id),
      envelopeJson: String(r.envelope_json),
    }));
  }

  // ---- subscribers --------------------------------------------------------------------------------------

  async upsertSubscriber(correlationId: string, registrationId: string, instanceId: string, ttlMs: number): Promise<void> {
    const ttl = durationMs(ttlMs, 'subscriber TTL');
    await this.ensureSchema();
    await this.run(this.statements.upsertSubscriber, {
      correlation_id: correlationId,
      registration_id: registrationId,
      instance_id: instanceId,
      ttl_ms: ttl,
    });
  }

  async heartbeatSubscribers(
    instanceId: string,
    registrations: ReadonlyArray<{ correlationId: string; registrationId: string }>,
    ttlMs: number,
  ): Promise<void> {
    if (registrations.length === 0) return;
    const ttl = durationMs(ttlMs, 'subscriber TTL');
    // a key twice in one MERGE source is error 8672: correlation ids are exact, registration ids case-free
    const seen = new Set<string>();
    const unique = registrations.filter((r) => {
      const key = `${r.correlationId}\u0000${r.registrationId.toLowerCase()}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    await this.ensureSchema();
    for (let i = 0; i < unique.length; i += HEARTBEAT_CHUNK) {
      const chunk = unique.slice(i, i + HEARTBEAT_CHUNK).map((r) => ({ c: r.correlationId, r: r.registrationId }));
      await this.run(this.statements.heartbeatSubscribers, { rows: JSON.stringify(chunk), instance_id: instanceId, ttl_ms: ttl });
    }
  }

  async deleteSubscriber(correlationId: string, registrationId: string): Promise<void> {
    await this.ensureSchema();
    await this.run(this.statements.deleteSubscriber, { correlation_id: correlationId, registration_id: registrationId });
  }

  async countActiveSubscribers(correlationId: string): Promise<number> {
    await this.ensureSchema();
    const result = await this.run(this.statements.countActiveSubscribers, { correlation_id: correlationId });
    return Number(rows(result)[0]?.active ?? 0);
  }

  // ---- statistics (the dashboard) --------------------------------------------------------------------------

  async channelStats(): Promise<ChannelStats> {
    await this.ensureSchema();
    const row = rows(await this.run(channelStats(this.names), {}))[0];
    // COUNT_BIG arrives from tedious as a decimal string
    return { storedResponses: Number(row?.stored_responses ?? 0), liveWaiters: Number(row?.live_waiters ?? 0), registrations: Number(row?.registrations ?? 0) };
  }

  // ---- prune --------------------------------------------------------------------------------------------

  async pruneExpiredBatch(table: ChannelTable): Promise<number> {
    const statement =
      table === 'messages'
        ? this.statements.pruneMessages
        : table === 'subscribers'
          ? this.statements.pruneSubscribers
          : table === 'recovery'
            ? this.statements.pruneRecovery
            : undefined;
    if (!statement) throw new TypeError(`unknown channel table '${String(table)}'`);
    await this.ensureSchema();
    return Number(rows(await this.run(statement, {}))[0]?.deleted ?? 0);
  }
}
