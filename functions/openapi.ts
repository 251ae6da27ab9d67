import { app, type HttpRequest, type HttpResponseInit } from '@azure/functions';
import { openApiDocument } from '../shared/http/openapi';
import { json } from '../shared/http/problem';
import { appConfig } from '../shared/runtime';

/** GET /api/openapi.json — the OpenAPI 3.1 description of this API. */
export async function openApi(request: HttpRequest): Promise<HttpResponseInit> {
  const url = new URL(request.url);
  return json(200, openApiDocument(`${url.origin}/api`, { maxWaitSeconds: appConfig().channel.maxWaitSeconds }));
}

app.http('openapi', { methods: ['GET'], authLevel: 'function', route: 'openapi.json', handler: openApi });
