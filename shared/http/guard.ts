import type { HttpRequest, HttpResponseInit, InvocationContext } from '@azure/functions';
import { failureAnswer } from './failure';

type HttpHandler = (request: HttpRequest, context: InvocationContext) => Promise<HttpResponseInit>;

/**
 * Whatever a handler throws (the runtime failing to start, a bug) becomes the app's own problem+json answer:
 * 503 + Retry-After when transient, else 500. Left to the Functions host it would be an empty 500 on Azure.
 */
export function guarded(what: string, handler: HttpHandler): HttpHandler {
  return async (request, context) => {
    try {
      return await handler(request, context);
    } catch (err) {
      return failureAnswer(err, context, what);
    }
  };
}
