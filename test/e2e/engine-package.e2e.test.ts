// The engine as a user installs it (`npm run pack:engine`, scripts/engine-package.js): the tarball holds the engine
// (dist/shared with its declarations) under a manifest whose store drivers and tracing API are optional peer
// dependencies (issue 27: it used to install the whole Functions app, 333 packages / 431 MB). docs/engine.md:
// "Using the engine from your own program".
// - A real `npm ci --offline` of the tarball with `pg` (what a PostgreSQL user installs; every package from the npm
//   cache this repo's `npm ci` filled, at the locked versions) counts the packages and bytes installed and runs a
//   program: a store whose driver is missing fails with MissingPeerError naming the package.
// - The strict program and the docs' snippet compile against the tarball unpacked as npm unpacks it, with the rest
//   resolved from this repo's node_modules (linked as the temp dir's parent node_modules): the snippet in a
//   CommonJS project and in an ES-module project, each made as a user makes one (`npm init -y`, `tsc --init`).
// The tarball is packed from a staging build with tsconfig.build.json's options, not from ./dist, so a build another
// test runs at the same time cannot change what is packed.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = path.resolve(__dirname, '../..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { packEngine, OPTIONAL_PEERS } = require('../../scripts/engine-package.js') as {
  packEngine: (stage: string, destination: string, dist?: string) => { tarball: string; files: string[] };
  OPTIONAL_PEERS: string[];
};
const repoPackage = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const repoLock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8'));
const npmCli = process.env.npm_execpath && /\.[cm]?js$/.test(process.env.npm_execpath) ? process.env.npm_execpath : undefined;

function npm(args: string[], cwd: string): string {
  const [cmd, argv] = npmCli ? [process.execPath, [npmCli, ...args]] : ['npm', args];
  return execFileSync(cmd, argv, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_config_update_notifier: 'false' } });
}

/** Runs tsc; a failure carries the compiler's output (tsc writes its errors to stdout). */
function tsc(args: string[], cwd: string, compiler = path.join(root, 'node_modules/typescript/bin/tsc')): string {
  try {
    return execFileSync(process.execPath, [compiler, ...args], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`tsc ${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

/** The tarball unpacked as npm unpacks it; dependencies (and the user's tsc, @types/node) from this repo's node_modules. */
function installLinked(work: string, app: string, tarball: string): void {
  symlinkSync(path.join(root, 'node_modules'), path.join(work, 'node_modules'), 'dir');
  const target = path.join(app, 'node_modules', 'asyncresponse-functions');
  mkdirSync(target, { recursive: true });
  execFileSync('tar', ['-xzf', tarball, '-C', target, '--strip-components=1']);
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'scratch-user', version: '1.0.0', private: true, dependencies: { 'asyncresponse-functions': `file:../${path.basename(tarball)}` } }, null, 2));
}

/** The lock entries a package needs (itself and its dependencies, resolved as npm lays them out). */
function lockClosure(names: readonly string[]): string[] {
  const packages = repoLock.packages as Record<string, { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> }>;
  const out = new Set<string>();
  const queue: Array<[string, string, boolean]> = names.map((n) => ['', n, false]);
  while (queue.length > 0) {
    const [from, name, optional] = queue.shift()!;
    let base = from;
    let key: string | undefined;
    for (;;) {
      const candidate = `${base ? `${base}/` : ''}node_modules/${name}`;
      if (packages[candidate]) {
        key = candidate;
        break;
      }
      if (!base) break;
      const i = base.lastIndexOf('/node_modules/');
      base = i < 0 ? '' : base.slice(0, i);
    }
    if (!key) {
      if (optional) continue;
      throw new Error(`package-lock.json has no entry for ${name} (needed by ${from || 'the project'})`);
    }
    if (out.has(key)) continue;
    out.add(key);
    for (const d of Object.keys(packages[key]!.dependencies ?? {})) queue.push([key, d, false]);
    for (const d of Object.keys(packages[key]!.optionalDependencies ?? {})) queue.push([key, d, true]);
  }
  return [...out];
}

/** `npm ci --offline` of the tarball and `peers` with a lock derived from this repo's: what a user's install gets. */
function installFromCache(app: string, tarball: string, manifest: { version: string; dependencies: Record<string, string> }, peers: readonly string[]): void {
  const spec = `file:../${path.basename(tarball)}`;
  const dependencies: Record<string, string> = { 'asyncresponse-functions': spec };
  for (const peer of peers) dependencies[peer] = repoLock.packages[`node_modules/${peer}`].version;
  const packages: Record<string, unknown> = {
    '': { name: 'scratch-user', version: '1.0.0', dependencies },
    'node_modules/asyncresponse-functions': {
      version: manifest.version,
      resolved: spec,
      integrity: `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`,
      dependencies: manifest.dependencies,
      engines: repoPackage.engines,
    },
  };
  for (const key of lockClosure([...Object.keys(manifest.dependencies), ...peers])) packages[key] = repoLock.packages[key];
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'scratch-user', version: '1.0.0', private: true, dependencies }, null, 2));
  writeFileSync(path.join(app, 'package-lock.json'), JSON.stringify({ name: 'scratch-user', version: '1.0.0', lockfileVersion: 3, requires: true, packages }, null, 2));
  npm(['ci', '--offline', '--no-audit', '--no-fund', '--loglevel=error'], app);
}

function bytesUnder(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) total += bytesUnder(p);
    else if (entry.isFile()) total += statSync(p).size;
  }
  return total;
}

/**
 * The docs' snippet (docs/engine.md, "Using the engine from your own program": the ```ts block that starts with
 * `// worker.mts`), taken from the page so the page and the test cannot drift: a `.mts` file is an ES module whatever
 * the project's `type` says, so the same file compiles and runs in a CommonJS project (what `npm init -y` makes) and
 * in an ESM one, under the tsconfig `tsc --init` writes (verbatimModuleSyntax, module nodenext).
 */
function docsSnippet(): string {
  const page = readFileSync(path.join(root, 'docs/engine.md'), 'utf8');
  const m = /```ts\n(\/\/ worker\.mts[^\n]*\n[\s\S]*?)```/.exec(page);
  if (!m) throw new Error('docs/engine.md has no ```ts block starting with // worker.mts');
  return m[1]!;
}

const PROGRAM = `import { createEngine, EngineOptionsError, type Job, type DrainReport } from 'asyncresponse-functions';

async function main(): Promise<void> {
  const seen: unknown[] = [];
  const engine = await createEngine({
    store: { kind: 'pglite', dataDir: 'memory://' },
    queues: {
      orders: {
        handler: async (job: Job) => {
          seen.push(job.payload);
        },
        policy: { maxDeliveryAttempts: 3 },
      },
    },
  });
  try {
    const published = await engine.publish('orders', { payload: { orderId: 'A-1' } });
    const id: string = published.id;
    const report: DrainReport = await engine.drain('orders', { budgetMs: 10_000, idleGraceMs: 200 });
    const stats = await engine.stats('orders');
    // @ts-expect-error a queue name is a string: this line must not type-check (the types are not \`any\`)
    await engine.stats(42).catch(() => undefined);
    // @ts-expect-error a misspelled policy key is a compile error (and EngineOptionsError at run time)
    void createEngine({ store: { kind: 'pglite', dataDir: 'memory://' }, queues: { q: { handler: { kind: 'echo' }, policy: { maxDeliveryAtempts: 1 } } } }).catch(() => undefined);
    let rejected = '';
    try {
      await createEngine({ store: { kind: 'pglite', dataDir: 'memory://' }, queues: {} , typo: 1 } as never);
    } catch (err) {
      if (err instanceof EngineOptionsError) rejected = err.message;
    }
    console.log(JSON.stringify({ id, seen, ready: stats.ready, handled: report, rejected }));
  } finally {
    await engine.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
`;

describe('the engine package, installed from its tarball into a scratch TypeScript project', () => {
  let work = '';
  let app = '';
  let tarball = '';
  let packedFiles: string[] = [];
  let manifest: { version: string; dependencies: Record<string, string>; peerDependencies: Record<string, string>; peerDependenciesMeta: Record<string, { optional: boolean }> };

  beforeAll(() => {
    const started = Date.now();
    const phase = (name: string) => console.log(`engine package: ${name} after ${((Date.now() - started) / 1000).toFixed(1)} s`);
    work = mkdtempSync(path.join(tmpdir(), 'arf-package-'));
    const stage = path.join(work, 'stage');
    mkdirSync(stage);
    // tsconfig.build.json's options (the ones `npm run build` uses), for the engine's entry and what it imports.
    writeFileSync(
      path.join(stage, 'tsconfig.json'),
      JSON.stringify({
        extends: path.join(root, 'tsconfig.build.json'),
        compilerOptions: { rootDir: root, outDir: path.join(stage, 'dist'), sourceMap: false, typeRoots: [path.join(root, 'node_modules/@types')] },
        include: [],
        files: [path.join(root, 'shared/index.ts')],
      }),
    );
    tsc(['-p', path.join(stage, 'tsconfig.json')], root);
    phase('built');
    const packed = packEngine(path.join(work, 'package'), work, path.join(stage, 'dist', 'shared'));
    tarball = packed.tarball;
    packedFiles = packed.files;
    manifest = JSON.parse(readFileSync(path.join(work, 'package', 'package.json'), 'utf8'));
    phase('packed');
    app = path.join(work, 'app');
    mkdirSync(app);
    installLinked(work, app, tarball);
    phase('installed');
  }, 600_000);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  }, 300_000);

  it('packs the engine with its declarations and nothing of the app, the tests or the sources', () => {
    expect(packedFiles).toContain('dist/shared/index.js');
    expect(packedFiles).toContain('dist/shared/index.d.ts');
    expect(packedFiles).toContain('package.json');
    const outside = packedFiles.filter((f) => !f.startsWith('dist/shared/') && f !== 'package.json' && f !== 'README.md');
    expect(outside).toEqual([]);
    expect(packedFiles.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
  });

  it('type-checks a strict TypeScript program importing it by name, and the program runs', () => {
    writeFileSync(path.join(app, 'index.ts'), PROGRAM);
    writeFileSync(
      path.join(app, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'node16', moduleResolution: 'node16', strict: true, outDir: 'out', types: ['node'] }, files: ['index.ts'] }),
    );
    // The user's own compiler (installed in the scratch project), strict and without skipLibCheck: our declarations
    // must hold. The only errors allowed are PGlite's own (its .d.ts needs the Emscripten types it does not depend
    // on; with skipLibCheck, which `tsc --init` sets, there are none; docs/engine.md says so). tsc emits despite them.
    let compileErrors = '';
    try {
      tsc(['-p', 'tsconfig.json'], app, require.resolve('typescript/bin/tsc', { paths: [app] }));
    } catch (err) {
      compileErrors = (err as Error).message;
    }
    const errorLines = compileErrors.split('\n').filter((l) => /error TS\d+/.test(l));
    expect(errorLines.filter((l) => !/^[^(]*node_modules\/@electric-sql\/pglite\//.test(l))).toEqual([]);
    expect(existsSync(path.join(app, 'out/index.js'))).toBe(true);
    const out = execFileSync(process.execPath, ['out/index.js'], { cwd: app, encoding: 'utf8', timeout: 120_000 });
    const result = JSON.parse(out.trim().split('\n').pop()!);
    expect(result.seen).toEqual([{ orderId: 'A-1' }]);
    expect(result.ready).toBe(0);
    expect(result.handled).toMatchObject({ queue: 'orders', claimed: 1, completed: 1, deadLettered: 0 });
    expect(result.rejected).toMatch(/typo/);
  }, 300_000);

  it('declares the store drivers and the tracing API as optional peers; only what every store needs is a dependency', () => {
    expect(manifest.dependencies).toEqual({ croner: expect.any(String) });
    expect(Object.keys(manifest.peerDependencies).sort()).toEqual([...OPTIONAL_PEERS].sort());
    for (const peer of OPTIONAL_PEERS) expect(manifest.peerDependenciesMeta[peer]).toEqual({ optional: true });
    // the app keeps every one of them
    for (const peer of OPTIONAL_PEERS) expect(repoPackage.dependencies[peer]).toBeDefined();
  });

  for (const kind of ['commonjs', 'module'] as const) {
    it(`the docs' snippet compiles and runs in a ${kind === 'commonjs' ? 'CommonJS' : 'ES-module'} project made with npm init -y and tsc --init`, () => {
      const project = path.join(work, `snippet-${kind}`);
      mkdirSync(path.join(project, 'node_modules'), { recursive: true });
      symlinkSync(path.join(app, 'node_modules', 'asyncresponse-functions'), path.join(project, 'node_modules', 'asyncresponse-functions'), 'dir');
      npm(['init', '-y'], project);
      if (kind === 'module') npm(['pkg', 'set', 'type=module'], project);
      expect(JSON.parse(readFileSync(path.join(project, 'package.json'), 'utf8')).type).toBe(kind);
      tsc(['--init'], project);
      expect(readFileSync(path.join(project, 'tsconfig.json'), 'utf8')).toMatch(/"verbatimModuleSyntax": true/);
      writeFileSync(path.join(project, 'worker.mts'), docsSnippet());
      tsc(['-p', '.'], project); // throws with the compiler's errors (TS1295 / TS1309 before the .mts form)
      const out = execFileSync(process.execPath, ['worker.mjs'], { cwd: project, encoding: 'utf8', timeout: 120_000 });
      expect(out).toContain("handled { orderId: 'A-1' }");
      expect(out).toContain('completed 1');
    }, 300_000);
  }

  it('installs for PostgreSQL as the engine and pg alone (npm ci from the cache), and a missing driver is named', () => {
    // a folder of its own: under `work`, this repo's node_modules (linked there) would supply the missing drivers
    const own = mkdtempSync(path.join(tmpdir(), 'arf-pg-user-'));
    const pgApp = path.join(own, 'pg-app');
    mkdirSync(pgApp);
    copyFileSync(tarball, path.join(own, path.basename(tarball)));
    try {
    const started = Date.now();
    installFromCache(pgApp, tarball, manifest, ['pg']);
    const installed = readdirSync(path.join(pgApp, 'node_modules')).flatMap((n) => (n.startsWith('@') ? readdirSync(path.join(pgApp, 'node_modules', n)).map((m) => `${n}/${m}`) : n.startsWith('.') ? [] : [n]));
    const bytes = bytesUnder(path.join(pgApp, 'node_modules'));
    console.log(`engine package for PostgreSQL: ${installed.length} packages, ${(bytes / 1e6).toFixed(1)} MB of node_modules, installed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    expect(installed).toContain('pg');
    expect(installed).not.toContain('mssql');
    expect(installed).not.toContain('@electric-sql/pglite');
    expect(installed).not.toContain('applicationinsights');
    expect(installed.length).toBeLessThan(30);
    expect(bytes).toBeLessThan(20e6);
    writeFileSync(
      path.join(pgApp, 'missing.mjs'),
      `import { createEngine, MissingPeerError } from 'asyncresponse-functions';
for (const store of [{ kind: 'pglite', dataDir: 'memory://' }, { kind: 'sqlserver', connectionString: 'Server=127.0.0.1;Database=x' }]) {
  try {
    await createEngine({ store, queues: { q: { handler: async () => 1 } } });
  } catch (err) {
    console.log(err instanceof MissingPeerError ? err.packageName + ': ' + err.message : 'other: ' + err);
  }
}
`,
    );
    const out = execFileSync(process.execPath, ['missing.mjs'], { cwd: pgApp, encoding: 'utf8', timeout: 60_000 }).trim().split('\n');
    expect(out[0]).toMatch(/^@electric-sql\/pglite: .*needs the package '@electric-sql\/pglite'.*npm install @electric-sql\/pglite$/);
    expect(out[1]).toMatch(/^mssql: .*npm install mssql$/);
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  }, 300_000);
});
