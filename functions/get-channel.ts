import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { CALLBACK_QUEUE } from '../shared/queue-names';
import { guarded } from '../shared/http/guard';
import { failureAnswer } from '../shared/http/failure';
import { json } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';

/** GET /api/channel — the response channel's counts: stored responses, live waiters, registrations, callbacks. */
export async function getChannel(_request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  try {
    const stats = await rt.channel.store.channelStats();
    const callbacks = await rt.store.queueStats(CALLBACK_QUEUE, rt.config.deadLetterQueue);
    return json(200, {
      ...stats,
      callbacksQueued: callbacks.ready + callbacks.delayed + callbacks.leased,
      callbacksDeadLettered: callbacks.deadLettered,
    });
  } catch (err) {
    return failureAnswer(err, context, 'reading channel statistics');
  }
}

app.http('get-channel', { methods: ['GET'], authLevel: 'function', route: 'channel', handler: guarded('reading channel statistics', getChannel) });
