import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { guarded } from '../shared/http/guard';
import { failureAnswer } from '../shared/http/failure';
import { jobBody } from '../shared/http/job-answers';
import { json, malformedId, problem } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';

/**
 * GET /api/jobs/{id} — a job in whichever state a row holds it: delayed, ready, leased, dead-lettered (expired), or
 * completed on a queue that keeps history (JOB_HISTORY_RETENTION_DAYS). 404 when no row holds it.
 */
export async function getJob(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const { id } = request.params;
  const malformed = malformedId('id', id);
  if (malformed) return malformed;
  try {
    const job = await rt.track(rt.engine.job(id!));
    if (job) return json(200, jobBody(job));
    return problem(404, `no job '${id!.toLowerCase()}': never published, cancelled while waiting, completed on a queue without history (JOB_HISTORY_RETENTION_DAYS), or pruned`);
  } catch (err) {
    return failureAnswer(err, context, 'reading a job');
  }
}

app.http('get-job', { methods: ['GET'], authLevel: 'function', route: 'jobs/{id}', handler: guarded('reading a job', getJob) });
