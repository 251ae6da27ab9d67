import { app, type HttpRequest, type HttpResponseInit } from '@azure/functions';
import { dashboardFile } from '../shared/http/dashboard-files';
import { guarded } from '../shared/http/guard';

/**
 * GET /api/dashboard — the operator dashboard's page. Anonymous: the page holds no data; the key typed into it
 * goes with every data call (x-functions-key), so those stay keyed.
 */
export async function dashboard(request: HttpRequest): Promise<HttpResponseInit> {
  // The page's URLs are relative to /api/dashboard; from /api/dashboard/ they would resolve one level too deep.
  if (new URL(request.url).pathname.endsWith('/')) return { status: 301, headers: { location: '../dashboard' } };
  return dashboardFile('index.html');
}

app.http('dashboard', { methods: ['GET'], authLevel: 'anonymous', route: 'dashboard', handler: guarded('serving the dashboard', dashboard) });
