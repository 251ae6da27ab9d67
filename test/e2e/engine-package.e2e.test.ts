// The engine as a user installs it: `npm pack` this package, install the tarball into a scratch TypeScript project
// in a temp dir, compile a program that imports `asyncresponse-functions` with tsc --strict, and run it
// (createEngine on PGlite in memory, publish, drain, stats, close). docs/engine.md: "Using the engine from your own program".
//
// Offline, and two ways to install (no registry, no network):
// - default, `link`: the tarball is unpacked into the scratch project's node_modules/asyncresponse-functions, as npm
//   unpacks a `file:` tarball, and its dependencies resolve from this repo's node_modules, linked as the temp dir's
//   parent node_modules (Node looks up the directory tree). Seconds, so it runs in every `npm test`.
// - `ENGINE_PACKAGE_INSTALL=npm-ci`: a real `npm ci --offline` of the tarball with a package-lock.json derived from
//   this repo's (its production entries plus typescript and @types/node, and its overrides, which apply only in
//   the project that installs), so every package comes from the npm cache this repo's `npm ci` filled, at the
//   locked versions. About 270 packages and 450 MB (the Functions app's dependencies come along: docs/engine.md): 2 to 3
//   minutes on a busy 2-core machine, so it is opt-in.
// The tarball is packed from a staging copy built with tsconfig.build.json's options (declarations included), not
// from ./dist, so a build another test runs at the same time cannot change what is packed.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = path.resolve(__dirname, '../..');
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

/** `npm ci --offline` with a lock derived from this repo's: every package from the npm cache, at the locked versions. */
function installWithNpmCi(app: string, tarball: string): void {
  const tools = { typescript: repoPackage.devDependencies.typescript, '@types/node': repoPackage.devDependencies['@types/node'] };
  const spec = `file:../${path.basename(tarball)}`;
  const manifest = { name: 'scratch-user', version: '1.0.0', private: true, dependencies: { 'asyncresponse-functions': spec }, devDependencies: tools, overrides: repoPackage.overrides };
  const packages: Record<string, unknown> = {
    '': { name: manifest.name, version: manifest.version, dependencies: manifest.dependencies, devDependencies: tools },
    'node_modules/asyncresponse-functions': {
      version: repoPackage.version,
      resolved: spec,
      integrity: `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`,
      dependencies: repoPackage.dependencies,
      engines: repoPackage.engines,
    },
  };
  for (const [key, entry] of Object.entries(repoLock.packages as Record<string, { dev?: boolean }>)) {
    if (key.startsWith('node_modules/') && !entry.dev) packages[key] = entry;
  }
  for (const key of ['node_modules/typescript', 'node_modules/@types/node', 'node_modules/undici-types']) {
    packages[key] = { ...repoLock.packages[key], dev: true };
  }
  writeFileSync(path.join(app, 'package.json'), JSON.stringify(manifest, null, 2));
  writeFileSync(path.join(app, 'package-lock.json'), JSON.stringify({ name: manifest.name, version: manifest.version, lockfileVersion: 3, requires: true, packages }, null, 2));
  npm(['ci', '--offline', '--no-audit', '--no-fund', '--loglevel=error'], app);
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
    copyFileSync(path.join(root, 'package.json'), path.join(stage, 'package.json'));
    copyFileSync(path.join(root, 'README.md'), path.join(stage, 'README.md'));
    const packed = JSON.parse(npm(['pack', '--json', '--ignore-scripts', '--pack-destination', work], stage)) as Array<{ filename: string; files: Array<{ path: string }> }>;
    tarball = path.join(work, packed[0]!.filename);
    packedFiles = packed[0]!.files.map((f) => f.path);

    phase('packed');
    app = path.join(work, 'app');
    mkdirSync(app);
    if (process.env.ENGINE_PACKAGE_INSTALL === 'npm-ci') installWithNpmCi(app, tarball);
    else installLinked(work, app, tarball);
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
});
