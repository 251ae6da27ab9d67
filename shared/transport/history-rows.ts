// Rows of a history search as both dialects return them (same column names), read into a page of the model.

import { jobRecord, pickJobRow, type HistoryPage, type HistoryQuery, type HistoryRow, type HistoryState, type JobRecord, type StoredJobRow } from './history';
import { CORRELATION_ID_HEADER, DEAD_LETTER_SOURCE_HEADER } from './types';

/** The job the lookup's rows of one id describe (the live row first), or null when none. */
export function readJob(rows: readonly StoredJobRow[], deadLetterQueue: string): JobRecord | null {
  const row = pickJobRow(rows);
  return row ? jobRecord(row, deadLetterQueue, DEAD_LETTER_SOURCE_HEADER, CORRELATION_ID_HEADER) : null;
}

/** Which index a search seeks: the queue's when a queue is given, else the correlation id's. */
export function searchKey(q: HistoryQuery): { byQueue: boolean; key: string } {
  return q.queue !== undefined ? { byQueue: true, key: q.queue } : { byQueue: false, key: q.correlationId ?? '' };
}

export interface HistoryRowShape {
  id: string;
  queue: string;
  state: string;
  attempts: number;
  correlation_id: string | null;
  created_at: Date;
  available_at: Date;
  completed_at: Date;
  /** NULL for rows moved to history before it kept them (schema version 19 / PostgreSQL 17). */
  priority?: number | null;
  ordering_key?: string | null;
  /** completed_at as ISO text at the database's precision (the cursor's key). */
  completed_key: string;
}

/** SQL Server's CONVERT style 126 has no zone and drops trailing zero digits; PostgreSQL's text already ends in Z. */
function isoKey(text: string): string {
  return text.endsWith('Z') ? text : `${text}Z`;
}

export function historyRow(r: HistoryRowShape): HistoryRow {
  const id = String(r.id).toLowerCase();
  return {
    id,
    state: r.state as HistoryState,
    queue: String(r.queue),
    attempts: Number(r.attempts),
    correlationId: r.correlation_id ?? null,
    createdAt: r.created_at,
    availableAt: r.available_at,
    completedAt: r.completed_at,
    lastError: null,
    ...(r.priority == null ? {} : { priority: Number(r.priority) }),
    ...(r.ordering_key == null ? {} : { orderingKey: String(r.ordering_key) }),
    key: { completedAt: isoKey(String(r.completed_key)), id },
  };
}

/** A full page says there may be more: its last row is the next page's cursor. */
export function historyPage(rows: readonly HistoryRowShape[], top: number): HistoryPage {
  const items = rows.map(historyRow);
  const last = items[items.length - 1];
  return items.length >= top && last ? { items, next: last.key } : { items };
}
