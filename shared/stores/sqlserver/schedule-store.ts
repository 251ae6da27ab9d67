// Recurring schedules on SQL Server / Azure SQL (the ScheduleStore contract, shared/schedules/types.ts), on the pool
// the transport and the channel share. A firing is one batch in one transaction: the compare-and-set advance of
// the schedule row, then (only when it matched) the transport's own insert-if-absent publish or topic fan-out.

import type * as sql from 'mssql';
import type { Logger } from '../../log';
import type { FiringOutcome, ScheduleDefinition, ScheduleRow, ScheduleStore, SlotFiring, UpsertOutcome } from '../../schedules/types';
import type { SchemaNames } from '../schema-names';
import { definitionValues, scheduleRowOf } from '../../schedules/row';
import { newRequest } from './connection';
import { withPoolGuard, type PoolHolder } from './pool-guard';
import { scheduleStatements } from './schedule-statements';
import type { Statement } from './statements';
import { compareSqlServerGuids, rows } from './store-common';

export class SqlServerScheduleStore implements ScheduleStore {
  private readonly sql: ReturnType<typeof scheduleStatements>;
  private ready = false;

  constructor(
    private readonly holder: PoolHolder,
    names: SchemaNames,
    private readonly logger: Logger,
    private readonly schemaGate?: () => Promise<void>,
  ) {
    this.sql = scheduleStatements(names);
  }

  private async run<P extends string>(statement: Statement<P>, values: Record<P, unknown>): Promise<sql.IResult<unknown>> {
    if (!this.ready) {
      await this.schemaGate?.();
      this.ready = true;
    }
    return withPoolGuard(
      this.holder,
      (pool) => {
        const request = newRequest(pool);
        for (const name of Object.keys(statement.params) as P[]) request.input(name, statement.params[name], values[name]);
        return request.query(statement.text);
      },
      this.logger,
    );
  }

  async upsert(d: ScheduleDefinition, nextSlot: Date | null): Promise<UpsertOutcome> {
    const v = definitionValues(d);
    const r = await this.run(this.sql.upsert, {
      name: v.name,
      target_kind: v.targetKind,
      target: v.target,
      cron: v.cron,
      time_zone: v.timeZone,
      payload_json: v.payloadJson,
      headers_json: v.headersJson,
      paused: v.paused,
      misfire: v.misfire,
      catch_up_max: v.catchUpMax,
      next_slot: nextSlot,
    });
    const row = rows(r)[0];
    if (!row) throw new Error(`schedule '${d.name}' was deleted while it was being replaced; try again`);
    return { created: row.created === true, changed: row.changed === true, row: scheduleRowOf(row) };
  }

  async get(name: string): Promise<ScheduleRow | null> {
    const row = rows(await this.run(this.sql.get, { name }))[0];
    return row ? scheduleRowOf(row) : null;
  }

  async list(limit: number): Promise<ScheduleRow[]> {
    return rows(await this.run(this.sql.list, { limit })).map(scheduleRowOf);
  }

  async delete(name: string): Promise<boolean> {
    const r = await this.run(this.sql.delete, { name });
    return Number(rows(r)[0]?.deleted ?? 0) > 0;
  }

  async setPaused(name: string, paused: boolean, nextSlot: Date | null): Promise<ScheduleRow | null> {
    const row = rows(await this.run(this.sql.setPaused, { name, paused, next_slot: nextSlot }))[0];
    return row ? scheduleRowOf(row) : null;
  }

  async due(limit: number): Promise<{ rows: ScheduleRow[]; now: Date }> {
    const r = await this.run(this.sql.due, { limit });
    return { now: rows(r, 0)[0]!.now as Date, rows: rows(r, 1).map(scheduleRowOf) };
  }

  async soonest(): Promise<{ nextSlot: Date | null; now: Date }> {
    const row = rows(await this.run(this.sql.soonest, {}))[0]!;
    return { nextSlot: (row.next_slot as Date | null) ?? null, now: row.now as Date };
  }

  async fire(f: SlotFiring): Promise<FiringOutcome> {
    const cas = { name: f.name, expected_next: f.expectedNext, last_slot: f.lastSlot, next_slot: f.nextSlot };
    if (f.jobs.length === 0) {
      const r = await this.run(this.sql.advance, cas);
      return { advanced: rows(r, 0)[0]?.advanced === true, queues: [], inserted: 0 };
    }
    // the publish's batch shape (stores/sqlserver/store.ts): key order, ord for created_at
    const batch = (withQueue: boolean) =>
      JSON.stringify(
        f.jobs
          .map((j, ord) => ({
            id: j.id,
            ...(withQueue ? { queue: f.target.name } : {}),
            payload_json: j.payloadJson,
            headers_json: JSON.stringify(j.headers),
            delay_ms: 0,
            ord,
          }))
          .sort((a, b) => compareSqlServerGuids(a.id, b.id)),
      );
    const r =
      f.target.kind === 'queue'
        ? await this.run(this.sql.fireToQueue, { ...cas, batch: batch(true) })
        : await this.run(this.sql.fireToTopic, { ...cas, batch: batch(false), topic: f.target.name });
    if (rows(r, 0)[0]?.advanced !== true) return { advanced: false, queues: [], inserted: 0 };
    const inserted = rows(r, 1);
    const queues = f.target.kind === 'queue' ? (inserted.length > 0 ? [f.target.name] : []) : [...new Set(inserted.map((x) => String(x.queue)))];
    return { advanced: true, queues, inserted: inserted.length };
  }

  async now(): Promise<Date> {
    return rows(await this.run(this.sql.now, {}))[0]!.now as Date;
  }
}
