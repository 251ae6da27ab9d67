import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DASHBOARD_CSP, DASHBOARD_DIR, dashboardFile, isDashboardFile } from '../../shared/http/dashboard-files';

describe('dashboard files', () => {
  it('serves exactly the three files of dashboard/, by name only', () => {
    expect(readdirSync(DASHBOARD_DIR).sort()).toEqual(['app.css', 'app.js', 'index.html']);
    for (const name of ['index.html', 'app.js', 'app.css']) expect(isDashboardFile(name)).toBe(true);
    for (const name of ['../package.json', 'app.js/..', '__proto__', 'constructor', 'toString', 'hasOwnProperty', '', 'APP.JS', undefined]) {
      expect(isDashboardFile(name), String(name)).toBe(false);
    }
  });

  it('sends a CSP without inline scripts or styles and without other origins, plus nosniff', () => {
    const answer = dashboardFile('index.html');
    expect(answer.headers['content-security-policy']).toBe(DASHBOARD_CSP);
    expect(DASHBOARD_CSP).not.toMatch(/unsafe|\*|https?:/);
    expect(DASHBOARD_CSP).toContain("default-src 'none'");
    expect(answer.headers['x-content-type-options']).toBe('nosniff');
  });

  it('the page loads only its own two files: no inline script or style, no external URL', () => {
    const html = dashboardFile('index.html').body;
    expect([...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0])).toEqual(['<script src="dashboard/app.js" defer>']);
    expect([...html.matchAll(/<link\b[^>]*>/g)].map((m) => m[0])).toEqual(['<link rel="icon" href="data:,">', '<link rel="stylesheet" href="dashboard/app.css">']);
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=|https?:\/\/|\/\//);
  });

  it('the script never writes HTML: no innerHTML, outerHTML, insertAdjacentHTML or document.write', () => {
    const js = dashboardFile('app.js').body;
    expect(js).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/);
    expect(js).toContain("headers.set('x-functions-key'");
    expect(js).toContain('sessionStorage');
    expect(js).not.toContain('localStorage');
  });
});
