import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { flowFailureAnswer, isFlowStatus } from '../shared/http/flow-answers';
import { guarded } from '../shared/http/guard';
import { json, problem } from '../shared/http/problem';
import { queryNumber } from '../shared/http/query';
import { isListCursor } from '../shared/flows/store-rules';
import { getRuntime } from '../shared/runtime';

/** GET /api/flows?status=&flow=&limit=50&cursor= — runs newest first, and the count of live runs per status. */
export async function listFlows(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const flows = rt.engine.flows;
  if (!flows) return problem(404, 'durable flows are not enabled in this app');
  const status = request.query.get('status') ?? undefined;
  if (status !== undefined && !isFlowStatus(status)) return problem(400, 'status must be Running, Succeeded, Failed or Suspended', [{ field: 'status', message: `got '${status.slice(0, 50)}'` }]);
  const flow = request.query.get('flow') ?? undefined;
  if (flow !== undefined && !flows.registry.get(flow)) return problem(400, `flow '${flow.slice(0, 100)}' is not registered`, [{ field: 'flow', message: 'is not a registered flow' }]);
  const limit = queryNumber(request, 'limit', { fallback: 50, min: 1, max: 200, integer: true });
  if (!limit.ok) return problem(400, limit.detail, limit.errors);
  const cursor = request.query.get('cursor') ?? undefined;
  if (cursor !== undefined && cursor !== '' && !isListCursor(cursor)) return problem(400, 'cursor is not one a previous page returned', [{ field: 'cursor', message: 'pass back the cursor of the previous page unchanged' }]);
  try {
    const [page, counts] = await Promise.all([
      rt.track(flows.list({ limit: limit.value, ...(status ? { status } : {}), ...(flow ? { flowName: flow } : {}), ...(cursor ? { cursor } : {}) })),
      rt.track(flows.countByStatus()),
    ]);
    return json(200, { items: page.items.map(({ flowId, ...rest }) => ({ id: flowId, ...rest })), ...(page.cursor ? { cursor: page.cursor } : {}), counts, flows: flows.registry.names() });
  } catch (err) {
    return flowFailureAnswer(err, context, 'listing flow runs');
  }
}

app.http('list-flows', { methods: ['GET'], authLevel: 'function', route: 'flows', handler: guarded('listing flow runs', listFlows) });
