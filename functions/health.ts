import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { json } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';

/** GET /api/health — 200 when the database answers and the schema is usable, else 503. */
export async function health(_request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  let store = 'unknown';
  try {
    const rt = await getRuntime();
    store = rt.store.kind;
    const now = await rt.store.now();
    try {
      await rt.store.ensureSchema();
    } catch (err) {
      // the detail goes to the log only: health is anonymous, and catalog or driver text is not for everyone
      context.warn('health: the schema is not usable', err);
      return unhealthy({ status: 'degraded', store, schema: 'error (see the log)', databaseTime: now.toISOString() });
    }
    // callbacks off because the signing secret's Key Vault reference has not resolved: the rest works, so 200
    const problem = rt.config.channel.callbackSigningSecretProblem;
    return json(200, { status: 'ok', store, schema: 'ready', databaseTime: now.toISOString(), ...(problem ? { callbacks: `off: ${problem}` } : {}) });
  } catch (err) {
    context.warn('health: the database is unreachable', err);
    return unhealthy({ status: 'unavailable', store, schema: 'unknown', detail: 'the database did not answer (see the log)' });
  }
}

function unhealthy(body: Record<string, unknown>): HttpResponseInit {
  const answer = json(503, body);
  return { ...answer, headers: { ...(answer.headers as Record<string, string>), 'Retry-After': '5' } };
}

app.http('health', { methods: ['GET'], authLevel: 'anonymous', route: 'health', handler: health });
