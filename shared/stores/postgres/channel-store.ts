import type {
  CallbackJobTarget,
  ChannelMessage,
  ChannelNames,
  ChannelStats,
  ChannelStore,
  ChannelTable,
  InsertedMessage,
  OverdueMessage,
  Registration,
  SubscriptionStart,
} from '../../channel/types';
import { CALLBACK_QUEUE } from '../../queue-names';
import type { Logger } from '../../log';
import { DEFAULT_TRANSPORT_TABLE } from '../options';
import type { PgClient, Queryable } from './client';
import { advisoryKey, schemaLockResource } from './ddl';
import { channelDdl, channelNotifyPrefix, channelStatements } from './channel-statements';
import { channelStatsQuery } from './channel-stats';

interface MessageRow {
  id: string;
  correlation_id: string;
  envelope_json: string | null;
  created_at: Date;
  created_at_exact: string;
  acked_at: Date | null;
  acked_seq: string | null;
  recovery_claimed: boolean;
}

const toMessage = (r: MessageRow): ChannelMessage => ({
  id: r.id,
  correlationId: r.correlation_id,
  envelopeJson: r.envelope_json,
  createdAt: r.created_at,
  createdAtExact: r.created_at_exact,
  ackedAt: r.acked_at,
  ackedSeq: r.acked_seq,
  recoveryClaimed: r.recovery_claimed,
});

const EXPECTED: Record<'recovery' | 'messages' | 'subscribers', Array<[string, string, boolean]>> = {
  recovery: [
    ['correlation_id', 'text', false],
    ['registration_id', 'uuid', false],
    ['state_json', 'text', false],
    ['expires_at', 'timestamp with time zone', false],
    ['registered_at', 'timestamp with time zone', false],
  ],
  messages: [
    ['id', 'uuid', false],
    ['correlation_id', 'text', false],
    ['envelope_json', 'text', false],
    ['created_at', 'timestamp with time zone', false],
    ['expires_at', 'timestamp with time zone', false],
    ['acked_at', 'timestamp with time zone', true],
    ['acked_seq', 'bigint', true],
    ['recovery_claimed', 'boolean', false],
  ],
  subscribers: [
    ['correlation_id', 'text', false],
    ['registration_id', 'uuid', false],
    ['instance_id', 'text', false],
    ['expires_at', 'timestamp with time zone', false],
  ],
};

export class PostgresChannelStore implements ChannelStore {
  private readonly sql: ReturnType<typeof channelStatements>;
  private ready = false;
  private attempt?: Promise<void>;
  private readonly callbacks: CallbackJobTarget;

  /** `callbacks`: where routing enqueues callback jobs (default: the default transport table in the same schema). */
  constructor(
    private readonly client: PgClient,
    private readonly options: { names: ChannelNames; autoCreateSchema: boolean; logger: Logger; ownsClient?: boolean; callbacks?: CallbackJobTarget; schemaGate?: () => Promise<void> },
  ) {
    this.callbacks = options.callbacks ?? { schema: options.names.schema, table: DEFAULT_TRANSPORT_TABLE, queue: CALLBACK_QUEUE };
    this.sql = channelStatements(options.names, this.callbacks);
  }

  ensureSchema(): Promise<void> {
    if (this.ready) return Promise.resolve();
    this.attempt ??= this.createOrVerify().finally(() => (this.attempt = undefined));
    return this.attempt;
  }

  private async createOrVerify(): Promise<void> {
    await this.options.schemaGate?.();
    const n = this.options.names;
    if (this.options.autoCreateSchema && (await this.verify()).length > 0) {
      await this.client.transaction(async (tx) => {
        await tx.query(`SET LOCAL lock_timeout = '60s'`);
        await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [advisoryKey(schemaLockResource(n.schema))]);
        for (const stmt of channelDdl(n)) await tx.query(stmt);
      });
    }
    const problems = await this.verify();
    if (problems.length > 0) {
      throw new Error(
        `the channel tables in schema '${n.schema}' are not usable:\n- ${problems.join('\n- ')}\n` +
          'Run `npm run schema -- apply` (or `npm run schema -- print --dialect postgres`), or set AUTO_CREATE_SCHEMA=true.',
      );
    }
    this.ready = true;
  }

  /** Catalog check of the three tables and the sequence; returns the problems found. */
  private async verify(q: Queryable = this.client): Promise<string[]> {
    const n = this.options.names;
    const problems: string[] = [];
    const tables: Array<[keyof typeof EXPECTED, string]> = [
      ['recovery', n.recoveryTable],
      ['messages', n.messageTable],
      ['subscribers', n.subscriberTable],
    ];
    for (const [kind, table] of tables) {
      const cols = await q.query<{ column_name: string; data_type: string; is_nullable: string; collation_name: string | null; deterministic: boolean | null }>(
        `SELECT c.column_name, c.data_type, c.is_nullable, c.collation_name,
                (SELECT co.collisdeterministic FROM pg_collation co WHERE co.collname = c.collation_name LIMIT 1) AS deterministic
         FROM information_schema.columns c WHERE c.table_schema = $1 AND c.table_name = $2`,
        [n.schema, table],
      );
      if (cols.rows.length === 0) {
        problems.push(`table "${n.schema}"."${table}" does not exist`);
        continue;
      }
      const pk = await q.query<{ column_name: string }>(
        `SELECT a.attname AS column_name FROM pg_index i
         JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
         JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY(i.indkey)
         WHERE n.nspname = $1 AND c.relname = $2 AND i.indisprimary
         ORDER BY array_position(i.indkey::int2[], a.attnum)`,
        [n.schema, table],
      );
      const expectedPk = kind === 'messages' ? ['id'] : ['correlation_id', 'registration_id'];
      const foundPk = pk.rows.map((r) => r.column_name);
      if (foundPk.join(',') !== expectedPk.join(',')) {
        problems.push(
          foundPk.length === 0
            ? `"${table}" has no primary key; expected PRIMARY KEY (${expectedPk.join(', ')})`
            : `the primary key of "${table}" is on (${foundPk.join(', ')}); expected PRIMARY KEY (${expectedPk.join(', ')})`,
        );
      }
      const byName = new Map(cols.rows.map((c) => [c.column_name, c]));
      for (const [name, type, nullable] of EXPECTED[kind]) {
        const c = byName.get(name);
        const expected = `${type} ${nullable ? 'NULL' : 'NOT NULL'}`;
        if (!c) {
          problems.push(`"${table}" is missing the column '${name}' (expected ${expected})`);
          continue;
        }
        const found = `${c.data_type} ${c.is_nullable === 'YES' ? 'NULL' : 'NOT NULL'}`;
        if (found !== expected) problems.push(`column '${name}' of "${table}": expected ${expected}; found ${found}`);
        if (name === 'correlation_id' && c.deterministic === false) {
          problems.push(`column 'correlation_id' of "${table}" uses the nondeterministic collation '${c.collation_name}'; ids are compared ordinally: use COLLATE "C"`);
        }
      }
    }
    const seq = await q.query<{ data_type: string; increment: string; cycle_option: string; maximum_value: string }>(
      `SELECT data_type, increment, cycle_option, maximum_value FROM information_schema.sequences WHERE sequence_schema = $1 AND sequence_name = $2`,
      [n.schema, n.ackSequence],
    );
    const s = seq.rows[0];
    if (!s) problems.push(`sequence "${n.schema}"."${n.ackSequence}" does not exist (CREATE SEQUENCE IF NOT EXISTS … AS bigint START WITH 1)`);
    else {
      if (s.data_type !== 'bigint') problems.push(`sequence "${n.ackSequence}": expected bigint; found ${s.data_type}`);
      if (s.increment !== '1') problems.push(`sequence "${n.ackSequence}": expected INCREMENT BY 1; found ${s.increment}`);
      if (s.cycle_option !== 'NO') problems.push(`sequence "${n.ackSequence}": expected NO CYCLE`);
      if (s.maximum_value !== '9223372036854775807') problems.push(`sequence "${n.ackSequence}": expected the bigint maximum as MAXVALUE; found ${s.maximum_value}`);
    }
    return problems;
  }

  private async run<R>(text: string, values: unknown[]) {
    await this.ensureSchema();
    return this.client.query<R>(text, values);
  }

  async saveRegistration(correlationId: string, registrationId: string, stateJson: string, ttlMs: number, maxPerCorrelationId: number): Promise<Date | null> {
    await this.ensureSchema();
    const n = this.options.names;
    const lockKey = advisoryKey(`asyncresponse:registrations:${n.schema}.${n.recoveryTable}:${correlationId}`);
    const r = await this.client.transaction(async (tx) => {
      await tx.query(this.sql.saveRegistrationLock, [lockKey]);
      return tx.query<{ expires_at: Date }>(this.sql.saveRegistration, [correlationId, registrationId, stateJson, Math.round(ttlMs), Math.floor(maxPerCorrelationId)]);
    });
    return r.rows[0]?.expires_at ?? null;
  }

  async loadRegistrations(correlationId: string): Promise<Registration[]> {
    const r = await this.run<{ correlation_id: string; registration_id: string; state_json: string; registered_at: Date; expires_at: Date }>(
      this.sql.loadRegistrations,
      [correlationId],
    );
    return r.rows.map((x) => ({
      correlationId: x.correlation_id,
      registrationId: x.registration_id,
      stateJson: x.state_json,
      registeredAt: x.registered_at,
      expiresAt: x.expires_at,
    }));
  }

  async deleteRegistration(correlationId: string, registrationId: string): Promise<boolean> {
    return (await this.run(this.sql.deleteRegistration, [correlationId, registrationId])).rowCount > 0;
  }

  async insertMessage(id: string, correlationId: string, envelopeJson: string, retentionMs: number): Promise<InsertedMessage> {
    const ins = await this.run<{ created_at: Date }>(this.sql.insertMessage, [
      id,
      correlationId,
      envelopeJson,
      Math.round(retentionMs),
      channelNotifyPrefix(this.options.names),
    ]);
    const created = ins.rows[0];
    if (created) return { id, inserted: true, correlationId, createdAt: created.created_at, ackedAt: null, ackedSeq: null };
    const stored = await this.client.query<{ created_at: Date; acked_at: Date | null; acked_seq: string | null; correlation_id: string }>(this.sql.storedMessage, [id]);
    const row = stored.rows[0];
    if (!row) throw new Error(`response ${id} already existed but its row is gone (pruned); publish it with a new id`);
    return { id, inserted: false, correlationId: row.correlation_id, createdAt: row.created_at, ackedAt: row.acked_at, ackedSeq: row.acked_seq };
  }

  async loadPending(correlationId: string, watermark: SubscriptionStart, limit: number, after?: { createdAtExact: string; id: string }): Promise<ChannelMessage[]> {
    const r = await this.run<MessageRow>(this.sql.loadPending, [
      correlationId,
      watermark.startedAt,
      watermark.startedSeq,
      limit,
      after?.createdAtExact ?? null,
      after?.id ?? null,
    ]);
    return r.rows.map(toMessage);
  }

  async loadMessagesById(correlationId: string, ids: readonly string[]): Promise<ChannelMessage[]> {
    const out: ChannelMessage[] = [];
    for (let i = 0; i < ids.length; i += 1000) {
      const r = await this.run<MessageRow>(this.sql.loadById, [correlationId, ids.slice(i, i + 1000)]);
      out.push(...r.rows.map(toMessage));
    }
    return out;
  }

  async claimForDelivery(id: string, watermark: SubscriptionStart): Promise<boolean> {
    return (await this.run(this.sql.claimForDelivery, [id, watermark.startedAt, watermark.startedSeq])).rows.length > 0;
  }

  async claimForRecovery(id: string): Promise<boolean> {
    return (await this.run(this.sql.claimForRecovery, [id])).rows.length > 0;
  }

  async routeToCallbacks(id: string, correlationId: string, final: boolean): Promise<number | null> {
    const prefix = `${this.callbacks.schema}.${this.callbacks.table}:`;
    const r = await this.run<{ claimed: number; jobs: number }>(this.sql.routeToCallbacks, [id, correlationId, this.callbacks.queue, final, prefix]);
    return r.rows[0]!.claimed > 0 ? r.rows[0]!.jobs : null;
  }

  async holdForCallback(id: string, holdMs: number): Promise<string | null> {
    const r = await this.run<{ envelope_json: string }>(this.sql.holdForCallback, [id, Math.round(holdMs)]);
    return r.rows[0]?.envelope_json ?? null;
  }

  async isAcknowledged(id: string): Promise<boolean> {
    return (await this.run<{ acked: boolean }>(this.sql.isAcknowledged, [id])).rows[0]!.acked;
  }

  async subscriptionStart(): Promise<SubscriptionStart> {
    const r = await this.run<{ started_at: string; started_seq: string }>(this.sql.subscriptionStart, []);
    return { startedAt: r.rows[0]!.started_at, startedSeq: r.rows[0]!.started_seq };
  }

  async findOverdueWithRegistrations(olderThanMs: number, limit: number): Promise<OverdueMessage[]> {
    const r = await this.run<{ id: string; correlation_id: string; envelope_json: string }>(this.sql.findOverdue, [Math.round(olderThanMs), limit]);
    return r.rows.map((x) => ({ id: x.id, correlationId: x.correlation_id, envelopeJson: x.envelope_json }));
  }

  async upsertSubscriber(correlationId: string, registrationId: string, instanceId: string, ttlMs: number): Promise<void> {
    await this.run(this.sql.upsertSubscriber, [correlationId, registrationId, instanceId, Math.round(ttlMs)]);
  }

  async heartbeatSubscribers(instanceId: string, registrations: ReadonlyArray<{ correlationId: string; registrationId: string }>, ttlMs: number): Promise<void> {
    for (let i = 0; i < registrations.length; i += 1000) {
      const chunk = registrations.slice(i, i + 1000);
      await this.run(this.sql.heartbeatSubscribers, [chunk.map((x) => x.correlationId), chunk.map((x) => x.registrationId), instanceId, Math.round(ttlMs)]);
    }
  }

  async deleteSubscriber(correlationId: string, registrationId: string): Promise<void> {
    await this.run(this.sql.deleteSubscriber, [correlationId, registrationId]);
  }

  async countActiveSubscribers(correlationId: string): Promise<number> {
    return (await this.run<{ n: number }>(this.sql.countSubscribers, [correlationId])).rows[0]!.n;
  }

  async pruneExpiredBatch(table: ChannelTable): Promise<number> {
    return (await this.run(this.sql.prune(table), [])).rowCount;
  }

  async channelStats(): Promise<ChannelStats> {
    const r = await this.run<{ stored_responses: number; live_waiters: number; registrations: number }>(channelStatsQuery(this.options.names), []);
    const row = r.rows[0]!;
    return { storedResponses: row.stored_responses, liveWaiters: row.live_waiters, registrations: row.registrations };
  }

  async close(): Promise<void> {
    if (this.options.ownsClient) await this.client.close();
  }
}
