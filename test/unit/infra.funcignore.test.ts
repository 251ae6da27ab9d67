// .funcignore decides what `func azure functionapp publish` and `azd deploy` put in the package (gitignore syntax):
// only what the Functions host runs (host.json, package.json, the compiled dist/ and production node_modules), not
// the TypeScript sources, tests, benchmark, infrastructure or local settings. Read with a small gitignore matcher.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(__dirname, '..', '..');

interface Rule { negate: boolean; dirOnly: boolean; anchored: boolean; re: RegExp }

function parseIgnore(text: string): Rule[] {
  return text.split('\n').flatMap((raw) => {
    let line = raw.trim();
    if (!line || line.startsWith('#')) return [];
    const negate = line.startsWith('!');
    if (negate) line = line.slice(1);
    const dirOnly = line.endsWith('/');
    if (dirOnly) line = line.slice(0, -1);
    const anchored = line.startsWith('/') || line.includes('/');
    line = line.replace(/^\//, '');
    const body = line.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*\*/g, '\u0000').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]').replace(/\u0000/g, '.*');
    return [{ negate, dirOnly, anchored, re: new RegExp(anchored ? `^${body}$` : `(^|/)${body}$`) }];
  });
}

/** Whether a file (project-relative path) is left out: it, or one of its parent directories, matches (last rule wins). */
function ignored(rules: Rule[], file: string): boolean {
  const parts = file.split('/');
  for (let n = 1; n <= parts.length; n++) {
    const path = parts.slice(0, n).join('/');
    const isDir = n < parts.length;
    let state = false;
    for (const r of rules) if ((!r.dirOnly || isDir) && r.re.test(path)) state = !r.negate;
    if (state) return true;
  }
  return false;
}

const rules = parseIgnore(readFileSync(join(ROOT, '.funcignore'), 'utf8'));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  main: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

describe('.funcignore', () => {
  it('ships what the host runs: host.json, package.json, the compiled entry and production packages', () => {
    for (const kept of [
      'host.json',
      'package.json',
      pkg.main,
      'dist/functions/publish-message.js',
      'dist/shared/settings/load.js',
      'dist/shared/stores/sqlserver/statements.js',
      'dist/vendor/applicationinsights.js', // the bundled SDK (npm run build) that setup.ts loads
      ...Object.keys(pkg.dependencies).map((d) => `node_modules/${d}/package.json`),
      'node_modules/@azure/functions/package.json',
    ]) {
      expect(ignored(rules, kept), kept).toBe(false);
    }
  });

  it('leaves out sources, tests, benchmark, infrastructure, docs and local settings', () => {
    for (const left of [
      'functions/index.ts',
      'shared/settings/load.ts',
      'local/main.ts',
      'bench/run.ts',
      'test/unit/infra.funcignore.test.ts',
      'infra/main.bicep',
      'infra/deploy.sh',
      'docs/azure.md',
      'README.md',
      'tsconfig.json',
      'tsconfig.build.json',
      'vitest.config.mts',
      'local.settings.json',
      'local.settings.example.json',
      '.data/pglite/PG_VERSION',
      'azure.yaml',
      'dist/local/main.js',
      'dist/bench/run.js',
      'dist/probes/sqlserver.js',
      'probes/sqlserver.ts',
      'scripts/bundle-telemetry.mjs',
      'node_modules/@esbuild/linux-x64/package.json',
    ]) {
      expect(ignored(rules, left), left).toBe(true);
    }
  });

  // A devDependency that a production package also needs (the lockfile does not mark it `dev`, e.g. the
  // OpenTelemetry SDK the tracing tests register, which applicationinsights runs on) must ship; every other one not.
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
  const devOnly = (name: string) => lock.packages[`node_modules/${name}`]?.dev === true;

  it('leaves out every development-only devDependency', () => {
    const devOnlyNames = Object.keys(pkg.devDependencies).filter(devOnly);
    expect(devOnlyNames.length).toBeGreaterThan(5);
    for (const dev of devOnlyNames) expect(ignored(rules, `node_modules/${dev}/package.json`), dev).toBe(true);
  });

  it('keeps a devDependency that production packages need too', () => {
    // (type declarations are never loaded at run time, so @types/* go even when a production package lists them)
    const needed = Object.keys(pkg.devDependencies).filter((d) => !devOnly(d) && !d.startsWith('@types/'));
    expect(needed).toContain('@opentelemetry/sdk-trace-base');
    for (const dev of needed) {
      expect(ignored(rules, `node_modules/${dev}/package.json`), dev).toBe(false);
    }
  });

  it('matches like gitignore (the matcher can say no and yes)', () => {
    const r = parseIgnore('functions/\n/infra/\n*.md\n');
    expect(ignored(r, 'node_modules/@azure/functions/index.js')).toBe(true); // unanchored: any depth
    expect(ignored(r, 'node_modules/x/infra/a.js')).toBe(false); // anchored at the root
    expect(ignored(r, 'infra/a.bicep')).toBe(true);
    expect(ignored(r, 'docs/x.md')).toBe(true);
    expect(ignored(r, 'host.json')).toBe(false);
  });
});
