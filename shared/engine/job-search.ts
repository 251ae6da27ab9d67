// The engine's job search (issue 16 §2): what a caller may ask of the history, checked before any SQL runs, and
// the page it gets back with an opaque cursor.

import { decodeHistoryCursor, encodeHistoryCursor, HISTORY_STATES, type HistoryQuery, type HistoryState, type JobRecord } from '../transport/history';
import type { FieldError } from '../validation';

export const JOB_SEARCH_DEFAULT_TOP = 50;
export const JOB_SEARCH_MAX_TOP = 500;

export interface JobSearch {
  /** Jobs of exactly this queue (one of these two is required: each leads an index). */
  queue?: string;
  /** Jobs whose AR-Correlation-Id header is exactly this. */
  correlationId?: string;
  /** The history holds completed jobs: 'completed' (the default and, today, the only state searched). */
  state?: HistoryState;
  /** Completed at or after. */
  since?: Date;
  /** Completed before. */
  until?: Date;
  /** The `nextCursor` of the previous page, unchanged. */
  cursor?: string;
  /** Page size, 1 to 500 (default 50). */
  top?: number;
}

export interface JobSearchPage {
  /** Newest completed first. */
  items: JobRecord[];
  /** Present when there may be more: pass it back as `cursor`. */
  nextCursor?: string;
}

/** A search the engine refuses; `errors` names each field (the HTTP route answers 400 with them). */
export class JobSearchError extends Error {
  constructor(readonly errors: FieldError[]) {
    super(`invalid job search: ${errors.map((e) => `${e.field} ${e.message}`).join('; ')}`);
    this.name = 'JobSearchError';
  }
}

/** The store query of a search, or JobSearchError. */
export function historyQuery(s: JobSearch): HistoryQuery {
  const errors: FieldError[] = [];
  if (s.queue === undefined && s.correlationId === undefined) errors.push({ field: 'queue', message: 'give a queue or a correlationId (each is searched through its index)' });
  if (s.state !== undefined && !(HISTORY_STATES as readonly string[]).includes(s.state)) {
    errors.push({ field: 'state', message: `must be ${HISTORY_STATES.join(' or ')} (the history holds completed jobs; look a job up by id for its live state)` });
  }
  for (const f of ['since', 'until'] as const) {
    const d = s[f];
    if (d !== undefined && !(d instanceof Date && Number.isFinite(d.getTime()))) errors.push({ field: f, message: 'must be a valid instant' });
  }
  if (s.since && s.until && s.since.getTime() >= s.until.getTime()) errors.push({ field: 'until', message: 'must be after since' });
  const top = s.top ?? JOB_SEARCH_DEFAULT_TOP;
  if (!Number.isInteger(top) || top < 1 || top > JOB_SEARCH_MAX_TOP) errors.push({ field: 'top', message: `must be an integer from 1 to ${JOB_SEARCH_MAX_TOP}` });
  const after = s.cursor === undefined || s.cursor === '' ? undefined : decodeHistoryCursor(s.cursor);
  if (after === null) errors.push({ field: 'cursor', message: 'pass back the nextCursor of the previous page unchanged' });
  if (errors.length > 0) throw new JobSearchError(errors);
  return {
    ...(s.queue !== undefined ? { queue: s.queue } : {}),
    ...(s.correlationId !== undefined ? { correlationId: s.correlationId } : {}),
    ...(s.state !== undefined ? { state: s.state } : {}),
    ...(s.since ? { since: s.since } : {}),
    ...(s.until ? { until: s.until } : {}),
    ...(after ? { after } : {}),
    top,
  };
}

export function jobSearchPage(page: { items: ReadonlyArray<JobRecord & { key?: unknown }>; next?: { completedAt: string; id: string } }): JobSearchPage {
  const items = page.items.map(({ key: _key, ...job }) => job as JobRecord);
  return page.next ? { items, nextCursor: encodeHistoryCursor(page.next) } : { items };
}
