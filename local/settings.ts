// What Core Tools reads from the app folder: local.settings.json (Values → environment, Host.LocalHttpPort)
// and host.json (extensions.http.routePrefix).
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

export interface LocalSettings {
  /** Names copied into the environment (already-set variables are left alone). */
  applied: string[];
  /** Host.LocalHttpPort, when given. */
  port?: number;
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`Cannot read ${file}: ${(err as Error).message}`);
  }
}

export function loadLocalSettings(dir: string, env: Record<string, string | undefined> = process.env): LocalSettings {
  const file = path.join(dir, 'local.settings.json');
  if (!existsSync(file)) return { applied: [] };
  const json = readJson(file) as { IsEncrypted?: boolean; Values?: Record<string, unknown>; Host?: { LocalHttpPort?: unknown } };
  if (json.IsEncrypted === true) throw new Error(`${file} is encrypted; the local host reads plain values only.`);
  const applied: string[] = [];
  for (const [name, value] of Object.entries(json.Values ?? {})) {
    if (env[name] !== undefined || value === null || value === undefined) continue;
    env[name] = typeof value === 'string' ? value : JSON.stringify(value);
    applied.push(name);
  }
  const port = Number(json.Host?.LocalHttpPort);
  return Number.isInteger(port) && port > 0 ? { applied, port } : { applied };
}

export function readRoutePrefix(dir: string): string {
  const file = path.join(dir, 'host.json');
  if (!existsSync(file)) return 'api';
  const json = readJson(file) as { extensions?: { http?: { routePrefix?: unknown } } };
  const prefix = json.extensions?.http?.routePrefix;
  return typeof prefix === 'string' ? prefix : 'api';
}
