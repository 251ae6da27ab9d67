import { app, type HttpRequest, type HttpResponseInit } from '@azure/functions';
import { guarded } from '../shared/http/guard';
import { openApiDocument } from '../shared/http/openapi';
import { json } from '../shared/http/problem';
import { appConfig } from '../shared/runtime';

/** GET /api/openapi.json — the OpenAPI 3.1 description of this API. */
export async function openApi(_request: HttpRequest): Promise<HttpResponseInit> {
  // A relative server URL: behind Azure's front ends (or APIM) the request URL's scheme and host are not what
  // the client used, and a relative URL resolves against wherever the client fetched this document from.
  return json(200, openApiDocument('/api', { maxWaitSeconds: appConfig().channel.maxWaitSeconds }));
}

app.http('openapi', { methods: ['GET'], authLevel: 'function', route: 'openapi.json', handler: guarded('serving the OpenAPI document', openApi) });
