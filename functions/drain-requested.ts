import { app, type InvocationContext, type Timer } from '@azure/functions';
import { drainQueues } from '../shared/drain-queues';
import { parseRequest, recheckRequest } from '../shared/drain-requests/message';
import { appConfig, getRuntime } from '../shared/runtime';
import type { DrainReport } from '../shared/transport/drain-loop';
import { evaluateSchedules } from '../shared/evaluate-schedules';
import { sweepChannelTimer } from './sweep-channel';

/** The timer argument of a sweep run on request (the sweep does not read it). */
const REQUESTED: Timer = { isPastDue: false, schedule: { adjustForDST: false }, scheduleStatus: { last: '', next: '', lastUpdated: '' } };

/**
 * Storage-queue trigger (DRAIN_TRIGGER=queue): one drain request = one budgeted drain of the queues it names
 * (ending after DRAIN_REQUEST_IDLE_GRACE_SECONDS of empty claims), a channel sweep when it asks for one, an
 * evaluation of the due schedules when it asks for that (sent to surface at a schedule's next slot). A request with
 * `recheck` (the T-SQL announce, sent before its publisher's COMMIT) whose drain of a queue claimed nothing is sent
 * again for that queue, visible a little later, with one re-check fewer (drain-requests/message.ts). A drain
 * stopped by its budget asks for more (drainQueues). A drain that failed throws, so the host makes the request
 * visible again (host.json visibilityTimeout) and, after maxDequeueCount, moves it to the poison queue; the
 * timers drain what it was for either way.
 */
export async function drainRequested(message: unknown, context: InvocationContext): Promise<DrainReport[]> {
  const request = parseRequest(message);
  if (typeof request === 'string') {
    context.warn(`drain request ignored: ${request}`);
    return [];
  }
  const rt = await getRuntime();
  const unknown = request.queues.filter((q) => rt.engine.route(q) === undefined);
  if (unknown.length > 0) context.warn(`drain request names queues without a route (ignored): ${unknown.join(', ')}`);
  const queues = request.queues.filter((q) => rt.engine.route(q) !== undefined);
  const [reports] = await Promise.all([
    drainQueues(rt, queues, context, { idleGraceMs: rt.config.drainRequests.idleGraceMs }),
    request.sweep ? sweepChannelTimer(REQUESTED, context) : undefined,
    request.schedules ? evaluateSchedules(rt, context) : undefined,
  ]);
  // a request sent before its publisher committed (the T-SQL announce) found nothing: look again a little later
  // (idle, or a budget shorter than the idle grace; a failed drain's request comes back by itself)
  const rechecks = reports.filter((r) => r.claimed === 0 && (r.stoppedBy === 'idle' || r.stoppedBy === 'budget')).map((r) => recheckRequest(request, r.queue));
  await Promise.all(rechecks.map((next) => (next && rt.drainRequests ? rt.drainRequests.sendRequest(next.message, next.visibilitySeconds) : undefined)));
  const failed = reports.filter((r) => r.stoppedBy === 'error').map((r) => r.queue);
  if (failed.length > 0) throw new Error(`draining ${failed.join(', ')} failed; the request comes back after the visibility timeout`);
  return reports;
}

const requests = appConfig().drainRequests;
if (requests.trigger === 'queue') {
  app.storageQueue('drain-requested', { queueName: requests.queueName, connection: requests.connection, handler: drainRequested });
}
