// A schedules-table row as both dialects read and write it (the column values are the same on each).

import { parseHeadersLenient } from '../transport/headers';
import type { ScheduleDefinition, ScheduleRow } from './types';

type Row = Record<string, unknown>;

export function scheduleRowOf(r: Row): ScheduleRow {
  const misfire = r.misfire === 'catchUp' ? { policy: 'catchUp' as const, max: Number(r.catch_up_max) } : { policy: 'skip' as const };
  return {
    name: String(r.name),
    target: { kind: r.target_kind === 'topic' ? 'topic' : 'queue', name: String(r.target) },
    cron: String(r.cron),
    timeZone: String(r.time_zone),
    payloadJson: String(r.payload_json),
    headers: parseHeadersLenient(r.headers_json as string),
    paused: r.paused === true || r.paused === 1,
    misfire,
    lastSlot: r.last_slot == null ? null : new Date(r.last_slot as Date),
    nextSlot: r.next_slot == null ? null : new Date(r.next_slot as Date),
    createdAt: new Date(r.created_at as Date),
    updatedAt: new Date(r.updated_at as Date),
  };
}

/** The definition as the upsert's parameters (both dialects store the same values). */
export function definitionValues(d: ScheduleDefinition) {
  return {
    name: d.name,
    targetKind: d.target.kind,
    target: d.target.name,
    cron: d.cron,
    timeZone: d.timeZone,
    payloadJson: d.payloadJson,
    headersJson: JSON.stringify(d.headers),
    paused: d.paused,
    misfire: d.misfire.policy,
    catchUpMax: d.misfire.policy === 'catchUp' ? d.misfire.max : 0,
  };
}

