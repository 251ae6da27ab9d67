import { app, type HttpRequest, type HttpResponseInit } from '@azure/functions';
import { dashboardFile, isDashboardFile } from '../shared/http/dashboard-files';
import { guarded } from '../shared/http/guard';
import { problem } from '../shared/http/problem';

/** GET /api/dashboard/{file} — the page's script and stylesheet (app.js, app.css) and nothing else. Anonymous, like the page. */
export async function dashboardAsset(request: HttpRequest): Promise<HttpResponseInit> {
  const file = request.params.file;
  if (file === 'index.html' || !isDashboardFile(file)) return problem(404, 'the dashboard has app.js and app.css only');
  return dashboardFile(file);
}

app.http('dashboard-asset', { methods: ['GET'], authLevel: 'anonymous', route: 'dashboard/{file}', handler: guarded('serving the dashboard', dashboardAsset) });
