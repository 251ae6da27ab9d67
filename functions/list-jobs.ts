import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { JobSearchError } from '../shared/engine/job-search';
import { UnknownQueueError } from '../shared/engine/create-engine';
import { guarded } from '../shared/http/guard';
import { failureAnswer } from '../shared/http/failure';
import { jobBody, parseJobSearch } from '../shared/http/job-answers';
import { json, problem } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';

/**
 * GET /api/jobs?queue=&correlationId=&state=completed&since=&until=&cursor=&top=50 — completed jobs of the history,
 * newest first, by queue or correlation id (each through its index), a page at a time.
 */
export async function listJobs(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const parsed = parseJobSearch(request);
  if ('errors' in parsed) return problem(400, 'the job search is invalid', parsed.errors);
  try {
    const page = await rt.track(rt.engine.searchJobs(parsed.search));
    const hint = page.items.length === 0 && !parsed.search.cursor ? noHistoryHint(parsed.search.queue, rt.config.queues, (q) => rt.engine.route(q)?.policy.historyRetentionMs) : undefined;
    return json(200, { items: page.items.map(jobBody), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}), ...(hint ? { hint } : {}) });
  } catch (err) {
    if (err instanceof JobSearchError) return problem(400, 'the job search is invalid', err.errors);
    if (err instanceof UnknownQueueError) return problem(400, `queue '${err.queue.slice(0, 100)}' is not a configured queue`, [{ field: 'queue', message: 'is not a configured queue' }]);
    return failureAnswer(err, context, 'searching jobs');
  }
}

/**
 * Why an empty first page may be empty (issue 27): job history is off by default, so a new user's first search of a
 * queue whose jobs just completed finds nothing. Undefined when the queue (or, by correlation id, some queue) keeps
 * history.
 */
export function noHistoryHint(queue: string | undefined, queues: readonly string[], retentionMs: (queue: string) => number | undefined): string | undefined {
  const how = 'completed jobs are deleted at once; set JOB_HISTORY_RETENTION_DAYS (every queue) or QUEUE__<key>__JOB_HISTORY_RETENTION_DAYS (one queue) to keep them';
  if (queue !== undefined) return (retentionMs(queue) ?? 0) > 0 ? undefined : `queue '${queue}' keeps no job history: ${how}`;
  return queues.some((q) => (retentionMs(q) ?? 0) > 0) ? undefined : `no queue keeps job history: ${how}`;
}

app.http('list-jobs', { methods: ['GET'], authLevel: 'function', route: 'jobs', handler: guarded('searching jobs', listJobs) });
