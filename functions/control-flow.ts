import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { flowFailureAnswer, flowPath, flowRunAnswer } from '../shared/http/flow-answers';
import { guarded } from '../shared/http/guard';
import { problem } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';

const ACTIONS = ['suspend', 'resume', 'cancel', 'restart'] as const;

/**
 * POST /api/flows/{name}/{id}/suspend | resume | cancel | restart — suspend a Running run (its execution stops at the
 * next checkpoint), resume a Suspended one (woken at once), cancel one that has not ended (Failed; its parent is
 * woken), restart a Failed (or cancelled) one from a step, `{ "fromStep": "…" }` (the steps before it kept).
 */
export async function controlFlow(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const { name, id, action } = request.params;
  if (!(ACTIONS as readonly string[]).includes(action ?? '')) return problem(404, `no action '${action}': use suspend, resume, cancel or restart`);
  const bad = flowPath(rt.engine.flows, name, id);
  if (bad) return bad;
  try {
    const flows = rt.engine.flows!;
    const current = await rt.track(flows.get(id!));
    if (!current || current.flowName !== name) return flowRunAnswer(name!, id!, null);
    const a = action as (typeof ACTIONS)[number];
    if (a === 'restart') {
      const fromStep = await readFromStep(request);
      if (typeof fromStep !== 'string') return problem(400, fromStep.problem, [{ field: 'fromStep', message: fromStep.problem }]);
      return flowRunAnswer(name!, id!, await rt.track(flows.restart(id!, fromStep)));
    }
    const state = await rt.track(a === 'suspend' ? flows.suspend(id!) : a === 'resume' ? flows.resume(id!) : flows.cancel(id!));
    return flowRunAnswer(name!, id!, state);
  } catch (err) {
    return flowFailureAnswer(err, context, `${action} of flow run '${id}'`);
  }
}

/** The step to restart from: the JSON body's `fromStep`, or the `fromStep` query parameter. */
async function readFromStep(request: HttpRequest): Promise<string | { problem: string }> {
  let fromStep: unknown = request.query.get('fromStep') ?? undefined;
  const text = await request.text();
  if (text.trim() !== '') {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return { problem: 'the body is not JSON: send { "fromStep": "<step name>" }' };
    }
    fromStep = (body as { fromStep?: unknown } | null)?.fromStep ?? fromStep;
  }
  if (typeof fromStep !== 'string' || fromStep.length === 0 || fromStep.length > 200) return { problem: 'fromStep must name a step (1 to 200 characters)' };
  return fromStep;
}

app.http('control-flow', { methods: ['POST'], authLevel: 'function', route: 'flows/{name}/{id}/{action}', handler: guarded('controlling a flow run', controlFlow) });
