import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { linkedSignal } from '../shared/engine/signals';
import { clientGoneSignal } from '../shared/http/client-gone';
import { flowFailureAnswer, flowPath, flowRunAnswer } from '../shared/http/flow-answers';
import { guarded } from '../shared/http/guard';
import { problem } from '../shared/http/problem';
import { queryNumber } from '../shared/http/query';
import { getRuntime } from '../shared/runtime';

/** GET /api/flows/{name}/{id}?waitSeconds=0..MAX — a run; with waitSeconds, long-polls until it ends. */
export async function getFlow(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const { name, id } = request.params;
  const bad = flowPath(rt.engine.flows, name, id);
  if (bad) return bad;
  const waitSeconds = queryNumber(request, 'waitSeconds', { fallback: 0, min: 0, max: rt.config.channel.maxWaitSeconds, clamp: true });
  if (!waitSeconds.ok) return problem(400, waitSeconds.detail, waitSeconds.errors);
  const stop = linkedSignal([rt.stopping, clientGoneSignal(request)]);
  try {
    const flows = rt.engine.flows!;
    const state = await rt.track(waitSeconds.value > 0 ? flows.waitForEnd(id!, waitSeconds.value * 1000, stop.signal) : flows.get(id!));
    return flowRunAnswer(name!, id!, state);
  } catch (err) {
    return flowFailureAnswer(err, context, `reading flow run '${id}'`);
  } finally {
    stop.dispose();
  }
}

app.http('get-flow', { methods: ['GET'], authLevel: 'function', route: 'flows/{name}/{id}', handler: guarded('reading a flow run', getFlow) });
