import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadLocalSettings, readRoutePrefix } from '../../local/settings';

const dirs: string[] = [];
function appDir(files: Record<string, unknown>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'local-settings-'));
  dirs.push(dir);
  for (const [name, content] of Object.entries(files)) writeFileSync(path.join(dir, name), JSON.stringify(content));
  return dir;
}
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('local.settings.json and host.json', () => {
  it('copies Values into the environment without overriding what is set', () => {
    const dir = appDir({ 'local.settings.json': { IsEncrypted: false, Values: { A: 'from-file', B: 'from-file', N: 5 }, Host: { LocalHttpPort: 7075 } } });
    const env: Record<string, string | undefined> = { A: 'from-env' };
    expect(loadLocalSettings(dir, env)).toEqual({ applied: ['B', 'N'], port: 7075 });
    expect(env).toEqual({ A: 'from-env', B: 'from-file', N: '5' });
  });

  it('does nothing without the file, and rejects an encrypted one', () => {
    expect(loadLocalSettings(appDir({}), {})).toEqual({ applied: [] });
    expect(() => loadLocalSettings(appDir({ 'local.settings.json': { IsEncrypted: true } }), {})).toThrow(/encrypted/);
  });

  it('reads the route prefix from host.json, "api" by default', () => {
    expect(readRoutePrefix(appDir({}))).toBe('api');
    expect(readRoutePrefix(appDir({ 'host.json': { version: '2.0' } }))).toBe('api');
    expect(readRoutePrefix(appDir({ 'host.json': { extensions: { http: { routePrefix: '' } } } }))).toBe('');
  });
});
