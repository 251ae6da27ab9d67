// The JSON of a job (GET /api/jobs/{id}, the items of GET /api/jobs) and the parsing of the search's query.

import type { HttpRequest } from '@azure/functions';
import type { JobSearch } from '../engine/job-search';
import type { JobRecord } from '../transport/history';
import type { FieldError } from '../validation';

export function jobBody(job: JobRecord): Record<string, unknown> {
  return {
    id: job.id,
    state: job.state,
    queue: job.queue,
    attempts: job.attempts,
    correlationId: job.correlationId,
    createdAt: job.createdAt.toISOString(),
    availableAt: job.availableAt?.toISOString() ?? null,
    completedAt: job.completedAt?.toISOString() ?? null,
    lastError: job.lastError,
    ...(job.priority === undefined ? {} : { priority: job.priority }),
    ...(job.orderingKey === undefined ? {} : { orderingKey: job.orderingKey }),
  };
}

const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const SEARCH_KEYS = ['queue', 'correlationId', 'state', 'since', 'until', 'cursor', 'top'] as const;

/** The search of GET /api/jobs?queue=&correlationId=&state=&since=&until=&cursor=&top=, or its field errors. */
export function parseJobSearch(request: Pick<HttpRequest, 'query'>): { search: JobSearch } | { errors: FieldError[] } {
  const errors: FieldError[] = [];
  const one = (name: (typeof SEARCH_KEYS)[number]): string | undefined => {
    const all = request.query.getAll(name);
    if (all.length > 1) errors.push({ field: name, message: `is given ${all.length} times` });
    return all[0] === '' ? undefined : all[0];
  };
  const search: JobSearch = {};
  const queue = one('queue');
  if (queue !== undefined) search.queue = queue;
  const correlationId = one('correlationId');
  if (correlationId !== undefined) search.correlationId = correlationId;
  const state = one('state');
  if (state !== undefined) search.state = state as JobSearch['state'];
  for (const f of ['since', 'until'] as const) {
    const v = one(f);
    if (v === undefined) continue;
    const at = INSTANT.test(v) ? new Date(v) : undefined;
    if (at === undefined || Number.isNaN(at.getTime())) errors.push({ field: f, message: `must be an ISO 8601 instant with a zone (2026-12-01T10:00:00Z); got '${v.slice(0, 50)}'` });
    else search[f] = at;
  }
  const cursor = one('cursor');
  if (cursor !== undefined) search.cursor = cursor;
  const top = one('top');
  if (top !== undefined) {
    if (/^\d{1,4}$/.test(top)) search.top = Number(top);
    else errors.push({ field: 'top', message: `must be an integer from 1 to 500; got '${top.slice(0, 50)}'` });
  }
  return errors.length > 0 ? { errors } : { search };
}
