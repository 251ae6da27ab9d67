import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { flowFailureAnswer, flowPath, flowRunAnswer } from '../shared/http/flow-answers';
import { guarded } from '../shared/http/guard';
import { problem } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';

const ACTIONS = ['suspend', 'resume', 'cancel'] as const;

/**
 * POST /api/flows/{name}/{id}/suspend | resume | cancel — suspend a Running run (its execution stops at the next
 * checkpoint), resume a Suspended one (woken at once), cancel one that has not ended (Failed; its parent is woken).
 */
export async function controlFlow(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const { name, id, action } = request.params;
  if (!(ACTIONS as readonly string[]).includes(action ?? '')) return problem(404, `no action '${action}': use suspend, resume or cancel`);
  const bad = flowPath(rt.engine.flows, name, id);
  if (bad) return bad;
  try {
    const flows = rt.engine.flows!;
    const current = await rt.track(flows.get(id!));
    if (!current || current.flowName !== name) return flowRunAnswer(name!, id!, null);
    const a = action as (typeof ACTIONS)[number];
    const state = await rt.track(a === 'suspend' ? flows.suspend(id!) : a === 'resume' ? flows.resume(id!) : flows.cancel(id!));
    return flowRunAnswer(name!, id!, state);
  } catch (err) {
    return flowFailureAnswer(err, context, `${action} of flow run '${id}'`);
  }
}

app.http('control-flow', { methods: ['POST'], authLevel: 'function', route: 'flows/{name}/{id}/{action}', handler: guarded('controlling a flow run', controlFlow) });
