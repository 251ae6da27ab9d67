import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { guarded } from '../shared/http/guard';
import { correlationIdProblem } from '../shared/correlation-id';
import { failureAnswer } from '../shared/http/failure';
import { problem, malformedId } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';

/** DELETE /api/waiters/{registrationId}?correlationId=… — 204, or 404 when there is no such registration. */
export async function deleteWaiter(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const correlationId = request.query.get('correlationId');
  const why = correlationIdProblem(correlationId ?? undefined);
  if (why) return problem(400, `correlationId ${why}`, [{ field: 'correlationId', message: why }]);
  const id = request.params.registrationId;
  const malformed = malformedId('registrationId', id);
  if (malformed) return malformed;
  try {
    const deleted = await rt.track(rt.channel.store.deleteRegistration(correlationId!, id!.toLowerCase()));
    return deleted ? { status: 204 } : problem(404, `no registration '${id}' for that correlation id`);
  } catch (err) {
    return failureAnswer(err, context, 'deleting a callback registration');
  }
}

app.http('delete-waiter', { methods: ['DELETE'], authLevel: 'function', route: 'waiters/{registrationId}', handler: guarded('deleting a callback registration', deleteWaiter) });
