// A schedule as the HTTP API answers it (and the dashboard will read it): the definition as it was given, with its
// last and next run. The payload goes out as the text it was stored as (answer with jsonWithPayloads).

import { RawJson } from '../json/raw-json';
import { CORRELATION_ID_HEADER } from '../transport/types';
import type { ScheduleRow } from './types';

export interface ScheduleView {
  name: string;
  queue?: string;
  topic?: string;
  cron: string;
  timeZone: string;
  payload: RawJson;
  headers: Record<string, string>;
  correlationId?: string;
  paused: boolean;
  misfire: 'skip' | { catchUp: number };
  /** The newest slot fired (ISO 8601), null before the first. */
  lastRun: string | null;
  /** The slot it fires next; while paused, where it would. */
  nextRun: string | null;
  createdAt: string;
  updatedAt: string;
}

export function scheduleView(row: ScheduleRow): ScheduleView {
  const { [CORRELATION_ID_HEADER]: correlationId, ...headers } = row.headers;
  return {
    name: row.name,
    [row.target.kind]: row.target.name,
    cron: row.cron,
    timeZone: row.timeZone,
    payload: new RawJson(row.payloadJson),
    headers,
    ...(correlationId !== undefined ? { correlationId } : {}),
    paused: row.paused,
    misfire: row.misfire.policy === 'catchUp' ? { catchUp: row.misfire.max } : 'skip',
    lastRun: row.lastSlot?.toISOString() ?? null,
    nextRun: row.nextSlot?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
