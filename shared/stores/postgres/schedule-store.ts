// Recurring schedules on PostgreSQL and PGlite (the ScheduleStore contract, shared/schedules/types.ts). A firing is
// one transaction: the compare-and-set advance of the schedule row, then the slot jobs through the transport's own
// insert-if-absent publish statement (or the topic fan-out), which NOTIFYs the queues at commit.

import type { ScheduleDefinition, ScheduleRow, ScheduleStore, SlotFiring, FiringOutcome, UpsertOutcome } from '../../schedules/types';
import { definitionValues, scheduleRowOf } from '../../schedules/row';
import type { SchemaNames } from '../schema-names';
import type { PgClient } from './client';
import { pgScheduleStatements, type PgScheduleStatements } from './schedule-statements';
import { notifyPrefix, pgStatements } from './statements';
import { pgTopicStatements } from './topic-statements';

export class PostgresScheduleStore implements ScheduleStore {
  private readonly sql: PgScheduleStatements;
  private readonly publishSql: string;
  private readonly topicSql: string;
  private readonly prefix: string;
  private ready = false;

  constructor(
    private readonly client: PgClient,
    names: SchemaNames,
    private readonly schemaGate?: () => Promise<void>,
  ) {
    this.sql = pgScheduleStatements(names);
    this.publishSql = pgStatements(names.transport).publish;
    this.topicSql = pgTopicStatements(names.transport, names.subscriptionsTable).publishToTopic;
    this.prefix = notifyPrefix(names.transport);
  }

  private async ensure(): Promise<void> {
    if (this.ready) return;
    await this.schemaGate?.();
    this.ready = true;
  }

  async upsert(d: ScheduleDefinition, nextSlot: Date | null): Promise<UpsertOutcome> {
    await this.ensure();
    const v = definitionValues(d);
    const r = await this.client.query(this.sql.upsert, [v.name, v.targetKind, v.target, v.cron, v.timeZone, v.payloadJson, v.headersJson, v.paused, v.misfire, v.catchUpMax, nextSlot]);
    const written = r.rows[0];
    if (written) return { created: written.created === true, changed: true, row: scheduleRowOf(written) };
    const row = await this.get(d.name);
    if (!row) throw new Error(`schedule '${d.name}' was deleted while it was being replaced; try again`);
    return { created: false, changed: false, row };
  }

  async get(name: string): Promise<ScheduleRow | null> {
    await this.ensure();
    const r = await this.client.query(this.sql.get, [name]);
    return r.rows[0] ? scheduleRowOf(r.rows[0]) : null;
  }

  async list(limit: number): Promise<ScheduleRow[]> {
    await this.ensure();
    return (await this.client.query(this.sql.list, [limit])).rows.map(scheduleRowOf);
  }

  async delete(name: string): Promise<boolean> {
    await this.ensure();
    return (await this.client.query(this.sql.delete, [name])).rowCount > 0;
  }

  async setPaused(name: string, paused: boolean, nextSlot: Date | null): Promise<ScheduleRow | null> {
    await this.ensure();
    const r = await this.client.query(this.sql.setPaused, [name, paused, nextSlot]);
    return r.rows[0] ? scheduleRowOf(r.rows[0]) : null;
  }

  async due(limit: number): Promise<{ rows: ScheduleRow[]; now: Date }> {
    await this.ensure();
    const r = await this.client.query(this.sql.due, [limit]);
    const now = new Date(r.rows[0]!.now as Date);
    return { rows: r.rows.filter((x) => x.name != null).map(scheduleRowOf), now };
  }

  async soonest(): Promise<{ nextSlot: Date | null; now: Date }> {
    await this.ensure();
    const r = (await this.client.query(this.sql.soonest)).rows[0]!;
    return { nextSlot: r.next_slot == null ? null : new Date(r.next_slot as Date), now: new Date(r.now as Date) };
  }

  async fire(f: SlotFiring): Promise<FiringOutcome> {
    await this.ensure();
    return this.client.transaction(async (tx) => {
      const advanced = await tx.query(this.sql.advance, [f.name, f.expectedNext, f.lastSlot, f.nextSlot]);
      if (advanced.rowCount !== 1) return { advanced: false, queues: [], inserted: 0 };
      if (f.jobs.length === 0) return { advanced: true, queues: [], inserted: 0 };
      const ids = f.jobs.map((j) => j.id);
      const payloads = f.jobs.map((j) => j.payloadJson);
      const headers = f.jobs.map((j) => JSON.stringify(j.headers));
      const delays = f.jobs.map(() => 0);
      if (f.target.kind === 'queue') {
        // a schedule's jobs carry the default priority (0) and no ordering key
        const r = await tx.query(this.publishSql, [ids, f.jobs.map(() => f.target.name), payloads, headers, delays, this.prefix, ids.map(() => 0), ids.map(() => null)]);
        return { advanced: true, queues: r.rows.length > 0 ? [f.target.name] : [], inserted: r.rows.length };
      }
      const r = await tx.query<{ queue: string; inserted: boolean }>(this.topicSql, [ids, payloads, headers, delays, f.target.name, this.prefix, ids.map(() => 0)]);
      const fresh = r.rows.filter((x) => x.inserted);
      return { advanced: true, queues: [...new Set(fresh.map((x) => x.queue))], inserted: fresh.length };
    });
  }

  async now(): Promise<Date> {
    return new Date((await this.client.query(this.sql.now)).rows[0]!.now as Date);
  }
}
