// The operator dashboard's three files (dashboard/ at the repository root; `npm run build` copies them to
// dist/dashboard, which the Azure package holds). They hold no data, so they are served without a key; every data
// call the page makes goes through the keyed API. Only these names are served: nothing from the request reaches a path.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const TYPES = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
} as const;

export type DashboardFile = keyof typeof TYPES;

/** ../../dashboard from shared/http: the repository's folder from source, dist/dashboard from the build. */
export const DASHBOARD_DIR = join(__dirname, '..', '..', 'dashboard');

/** Scripts and styles from this origin's files only: no inline script or style, no other origin, no framing. */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export interface StaticAnswer {
  status: number;
  body: string;
  headers: Record<string, string>;
}

export function isDashboardFile(name: string | undefined): name is DashboardFile {
  return name !== undefined && Object.prototype.hasOwnProperty.call(TYPES, name);
}

const cache = new Map<DashboardFile, string>();

/** The file with its content type and the page's security headers; read once per process. */
export function dashboardFile(name: DashboardFile, dir = DASHBOARD_DIR): StaticAnswer {
  let body = dir === DASHBOARD_DIR ? cache.get(name) : undefined;
  if (body === undefined) {
    body = readFileSync(join(dir, name), 'utf8');
    if (dir === DASHBOARD_DIR) cache.set(name, body);
  }
  return {
    status: 200,
    body,
    headers: {
      'content-type': TYPES[name],
      'content-security-policy': DASHBOARD_CSP,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-cache',
    },
  };
}
