// The public entry (shared/index.ts) and everything it loads, statically or lazily, read no environment and keep
// no module-level mutable state, so a program can hold two engines with different settings in one process.
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(__dirname, '../..');

/** Known and accepted, with the reason; anything else found fails the test. */
const ALLOWED: Record<string, string> = {
  // Design §2: ONE credential per identity for the whole process (its token cache); the app passes the client id.
  'shared/stores/sqlserver/connection.ts': 'process-wide Entra credential cache and its AZURE_CLIENT_ID fallback',
  // Counts open clients so tests can assert that none is left open.
  'shared/stores/open-handles.ts': 'open-client bookkeeping for the leak check',
  // Keyed by pool object: each engine's pool finds its own holder; nothing is shared between engines.
  'shared/stores/sqlserver/pool-guard.ts': 'WeakMap from a pool to its holder',
  // Keyed by signal: each signal gets one abort listener for all its waiters; nothing is shared between engines.
  'shared/channel/abort-fanout.ts': 'WeakMap from an abort signal to its watchers',
  // Set and restored inside one synchronous stringifyJson call (RawJson.toJSON reads it): never held across an await.
  'shared/json/raw-json.ts': 'synchronous splice context of stringifyJson',
};

function importClosure(entry: string): string[] {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const src = readFileSync(file, 'utf8');
    for (const m of src.matchAll(/(?:^import\s+(?!type\b)[^;]*?from\s+|^export\s+(?!type\b)[^;]*?from\s+|import\()\s*'(\.[^']+)'/gm)) {
      const base = resolve(dirname(file), m[1]!);
      const target = [`${base}.ts`, join(base, 'index.ts')].find(existsSync);
      if (target) visit(target);
    }
  };
  visit(join(ROOT, entry));
  return [...seen].map((f) => relative(ROOT, f).replace(/\\/g, '/')).sort();
}

describe('shared/index.ts import closure', () => {
  const files = importClosure('shared/index.ts');

  it('reaches the engine, the stores and the drivers it loads lazily, but not the app composition', () => {
    for (const f of ['shared/engine/create-engine.ts', 'shared/transport/drain-loop.ts', 'shared/stores/postgres/notify-listener.ts', 'shared/stores/sqlserver/open.ts']) {
      expect(files).toContain(f);
    }
    for (const f of ['shared/settings/load.ts', 'shared/settings/index.ts', 'shared/runtime.ts', 'shared/telemetry/setup.ts', 'handlers/index.ts']) expect(files).not.toContain(f);
  });

  it('reads no environment variables and keeps no module-level mutable state', () => {
    const offenders: string[] = [];
    for (const f of files) {
      if (ALLOWED[f]) continue;
      const src = readFileSync(join(ROOT, f), 'utf8');
      if (/process\.env/.test(src)) offenders.push(`${f}: reads process.env`);
      for (const m of src.matchAll(/^(?:export\s+)?(?:let|var)\s+(\w+)/gm)) offenders.push(`${f}: module-level let/var ${m[1]}`);
      for (const m of src.matchAll(/^(?:export\s+)?const\s+(\w+)\s*(?::(?!\s*Readonly)[^=]+)?=\s*new\s+(?:Map|WeakMap|AbortController|EventEmitter)\b/gm)) offenders.push(`${f}: module-level ${m[1]}`);
    }
    expect(offenders).toEqual([]);
  });
});
