// `npm run schema -- …`: runs the schema CLI (dist/shared/cli/schema.js), building first only when a source it is
// built from (shared/, tsconfig*.json, package.json) is newer than the built CLI: a status check on a current
// checkout answers without a 5 s rebuild.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const builtIn = (dir) => path.join(dir, 'dist', 'shared', 'cli', 'schema.js');
const built = builtIn(root);

function newestMtime(dir) {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestMtime(p));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, fs.statSync(p).mtimeMs);
  }
  return newest;
}

/** Whether the CLI under `dir` must be built before it runs. */
function stale(dir = root) {
  if (!fs.existsSync(builtIn(dir))) return true;
  const sources = Math.max(
    newestMtime(path.join(dir, 'shared')),
    ...['tsconfig.json', 'tsconfig.build.json', 'package.json'].map((f) => fs.statSync(path.join(dir, f)).mtimeMs),
  );
  return sources > fs.statSync(builtIn(dir)).mtimeMs;
}

if (require.main === module) {
  if (stale()) {
    const npmCli = process.env.npm_execpath;
    const build =
      npmCli && /\.[cm]?js$/.test(npmCli)
        ? spawnSync(process.execPath, [npmCli, 'run', 'build', '--silent'], { cwd: root, stdio: 'inherit' })
        : spawnSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
    if (build.status !== 0) process.exit(build.status ?? 1);
  }
  const run = spawnSync(process.execPath, [built, ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' });
  process.exit(run.status ?? 1);
}

module.exports = { stale };
