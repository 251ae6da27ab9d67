import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { guarded } from '../shared/http/guard';
import { callbackUrlProblem } from '../shared/channel/callback-url';
import { RegistrationLimitError } from '../shared/channel/response-channel';
import { correlationIdProblem } from '../shared/correlation-id';
import { readJsonBody } from '../shared/http/body';
import { failureAnswer } from '../shared/http/failure';
import { json, problem, type FieldError } from '../shared/http/problem';
import { getRuntime } from '../shared/runtime';

/**
 * POST /api/waiters — register a signed callback for a correlation id: 201 { registrationId, expiresAt }; 409 when
 * the id already has MAX_REGISTRATIONS_PER_CORRELATION_ID unexpired registrations.
 */
export async function registerWaiter(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const rt = await getRuntime();
  const c = rt.config.channel;
  if (!c.callbackSigningSecret) return problem(503, `callbacks are disabled: ${c.callbackSigningSecretProblem ?? 'CALLBACK_SIGNING_SECRET is not set'}`);
  const body = await readJsonBody(request.headers.get('content-type'), request.headers.get('content-length'), () => request.text());
  if (!body.ok) return body.answer;
  const b = (body.value ?? {}) as Record<string, unknown>;
  const errors: FieldError[] = [];
  if (typeof body.value !== 'object' || Array.isArray(body.value) || body.value === null) errors.push({ field: '', message: 'must be an object' });
  for (const key of Object.keys(b)) {
    if (!['correlationId', 'callbackUrl', 'ttlSeconds'].includes(key)) errors.push({ field: key, message: 'is not a known field (correlationId, callbackUrl, ttlSeconds)' });
  }
  const idWhy = correlationIdProblem(b.correlationId);
  if (idWhy) errors.push({ field: 'correlationId', message: idWhy });
  const urlWhy = callbackUrlProblem(b.callbackUrl, c.callbackAllowedHosts);
  if (urlWhy) errors.push({ field: 'callbackUrl', message: urlWhy });
  const maxTtl = 3650 * 86400;
  if (b.ttlSeconds !== undefined && (typeof b.ttlSeconds !== 'number' || !(b.ttlSeconds >= 1) || b.ttlSeconds > maxTtl)) {
    errors.push({ field: 'ttlSeconds', message: `must be a number of seconds from 1 to ${maxTtl}` });
  }
  if (errors.length > 0) return problem(400, 'the registration has invalid fields; nothing was stored', errors);
  const ttlMs = typeof b.ttlSeconds === 'number' ? b.ttlSeconds * 1000 : c.recoveryStateExpiryMs;
  try {
    const reg = await rt.track(rt.channel.registerCallback(b.correlationId as string, b.callbackUrl as string, ttlMs));
    return json(201, { registrationId: reg.registrationId, expiresAt: reg.expiresAt.toISOString() });
  } catch (err) {
    if (err instanceof RegistrationLimitError) return problem(409, err.message);
    return failureAnswer(err, context, 'registering a callback');
  }
}

app.http('register-waiter', { methods: ['POST'], authLevel: 'function', route: 'waiters', handler: guarded('registering a callback', registerWaiter) });
