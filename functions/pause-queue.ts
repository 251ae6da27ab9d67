import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { guarded } from '../shared/http/guard';
import { failureAnswer } from '../shared/http/failure';
import { json } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';
import { unknownQueue } from '../shared/http/queue-routes';

const stateBody = (s: { queue: string; paused: boolean; pausedAt: Date | null }) => ({ queue: s.queue, paused: s.paused, pausedAt: s.pausedAt?.toISOString() ?? null });

/** POST /api/queues/{queue}/pause — every instance stops claiming from the queue; publishes are still accepted. */
export async function pauseQueue(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const notFound = unknownQueue(rt.config, request.params.queue, { internal: true });
  if (notFound) return notFound;
  try {
    return json(200, stateBody(await rt.track(rt.engine.pause(request.params.queue!))));
  } catch (err) {
    return failureAnswer(err, context, 'pausing a queue');
  }
}

/** POST /api/queues/{queue}/resume — claims go on; the queue's drains are woken. */
export async function resumeQueue(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const notFound = unknownQueue(rt.config, request.params.queue, { internal: true });
  if (notFound) return notFound;
  try {
    return json(200, stateBody(await rt.track(rt.engine.resume(request.params.queue!))));
  } catch (err) {
    return failureAnswer(err, context, 'resuming a queue');
  }
}

app.http('pause-queue', { methods: ['POST'], authLevel: 'function', route: 'queues/{queue}/pause', handler: guarded('pausing a queue', pauseQueue) });
app.http('resume-queue', { methods: ['POST'], authLevel: 'function', route: 'queues/{queue}/resume', handler: guarded('resuming a queue', resumeQueue) });
