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
    return json(200, { items: page.items.map(jobBody), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) });
  } catch (err) {
    if (err instanceof JobSearchError) return problem(400, 'the job search is invalid', err.errors);
    if (err instanceof UnknownQueueError) return problem(400, `queue '${err.queue.slice(0, 100)}' is not a configured queue`, [{ field: 'queue', message: 'is not a configured queue' }]);
    return failureAnswer(err, context, 'searching jobs');
  }
}

app.http('list-jobs', { methods: ['GET'], authLevel: 'function', route: 'jobs', handler: guarded('searching jobs', listJobs) });
