import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { readJsonBody } from '../shared/http/body';
import { flowFailureAnswer, flowPath } from '../shared/http/flow-answers';
import { guarded } from '../shared/http/guard';
import { json, problem } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';

const FIELDS = ['input', 'id'];

/** POST /api/flows/{name} — `{ input?, id? }`: starts a run (idempotent with an id): 202 `{ id, status }`. */
export async function startFlow(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const name = request.params.name;
  const bad = flowPath(rt.engine.flows, name);
  if (bad) return bad;
  const body = await readJsonBody(request.headers.get('content-type'), request.headers.get('content-length'), () => request.text(), undefined, (p) => p.length === 1 && p[0] === 'input');
  if (!body.ok) return body.answer;
  const value = body.value as Record<string, unknown> | null;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return problem(400, 'the body must be a JSON object: { input?, id? }');
  const unknown = Object.keys(value).filter((k) => !FIELDS.includes(k));
  if (unknown.length > 0) return problem(400, `unknown field(s): ${unknown.join(', ')}`, unknown.map((field) => ({ field, message: 'is not a field of a flow start' })));
  if (value.id !== undefined && typeof value.id !== 'string') return problem(400, 'id must be a string', [{ field: 'id', message: 'must be a string' }]);
  try {
    const started = await rt.track(rt.engine.flows!.start(name!, value.input ?? null, value.id === undefined ? {} : { id: value.id }));
    return json(started.created ? 202 : 200, { id: started.id, status: started.status, ...(started.created ? {} : { existing: true }) });
  } catch (err) {
    return flowFailureAnswer(err, context, `starting flow '${name}'`);
  }
}

app.http('start-flow', { methods: ['POST'], authLevel: 'function', route: 'flows/{name}', handler: guarded('starting a flow', startFlow) });
