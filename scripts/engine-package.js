// `npm run pack:engine`: the engine's own package (dist/shared: shared/index.ts and what it imports, with its
// declarations) packed as asyncresponse-functions-<version>.tgz in the repo folder, to install in your project.
//
// The engine's manifest is derived from this repo's package.json (one source tree, one lockfile, one version), with
// the app's dependencies left out: the store drivers and the tracing API are optional peer dependencies (install the
// one for your store: `pg`, `@electric-sql/pglite`, or `mssql` + `@azure/identity`; shared/peer.ts names a missing
// one), and what the engine always needs stays a dependency. The Functions app itself (functions/, local/) keeps
// every package as a dependency of this repo.
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');

/** What the engine requires whatever the store. */
const ENGINE_DEPENDENCIES = ['croner'];
/** Loaded only when the options need them (shared/peer.ts OPTIONAL_PEERS). */
const OPTIONAL_PEERS = ['pg', '@electric-sql/pglite', 'mssql', '@azure/identity', '@opentelemetry/api'];

/** The engine package's package.json from the repo's. */
function engineManifest(pkg) {
  const pick = (names) => Object.fromEntries(names.map((n) => {
    const v = pkg.dependencies[n];
    if (!v) throw new Error(`package.json has no dependency '${n}' for the engine package`);
    return [n, /^\d/.test(v) ? `^${v}` : v];
  }));
  return {
    name: pkg.name,
    version: pkg.version,
    description: 'The engine of asyncresponse-functions: a durable job queue and a correlated response channel on SQL Server, PostgreSQL or PGlite.',
    license: pkg.license,
    type: 'commonjs',
    main: 'dist/shared/index.js',
    types: 'dist/shared/index.d.ts',
    exports: pkg.exports,
    files: pkg.files,
    engines: pkg.engines,
    dependencies: pick(ENGINE_DEPENDENCIES),
    peerDependencies: pick(OPTIONAL_PEERS),
    peerDependenciesMeta: Object.fromEntries(OPTIONAL_PEERS.map((n) => [n, { optional: true }])),
  };
}

/** Stages dist/shared with the engine's manifest under `stage` and packs it into `destination`; returns the tarball. */
function packEngine(stage, destination, dist = path.join(root, 'dist', 'shared')) {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  fs.rmSync(stage, { recursive: true, force: true });
  fs.mkdirSync(path.join(stage, 'dist'), { recursive: true });
  fs.cpSync(dist, path.join(stage, 'dist', 'shared'), { recursive: true, filter: (f) => !f.endsWith('.map') });
  fs.writeFileSync(path.join(stage, 'package.json'), `${JSON.stringify(engineManifest(pkg), null, 2)}\n`);
  fs.copyFileSync(path.join(root, 'README.md'), path.join(stage, 'README.md'));
  const npmCli = process.env.npm_execpath && /\.[cm]?js$/.test(process.env.npm_execpath) ? process.env.npm_execpath : undefined;
  const [cmd, argv] = npmCli ? [process.execPath, [npmCli]] : ['npm', []];
  const out = execFileSync(cmd, [...argv, 'pack', '--json', '--ignore-scripts', '--pack-destination', destination], { cwd: stage, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const packed = JSON.parse(out)[0];
  return { tarball: path.join(destination, packed.filename), files: packed.files.map((f) => f.path), size: packed.size, unpackedSize: packed.unpackedSize };
}

if (require.main === module) {
  const { tarball, files, size } = packEngine(path.join(root, 'dist', 'engine-package'), root);
  console.log(`${path.relative(process.cwd(), tarball)}: ${files.length} files, ${(size / 1024).toFixed(0)} kB (the engine's dist/shared; drivers are optional peers)`);
}

module.exports = { engineManifest, packEngine, ENGINE_DEPENDENCIES, OPTIONAL_PEERS };
