// `npm start`: builds (npm run build), then runs the local host (dist/local/main.js) in this same process, so
// stopping `npm start` by its PID stops the host and its Azurite child.
//
// npm runs a script through `sh -c` and forwards SIGTERM and SIGINT to that shell only. With the old
// `npm run build && node dist/local/main.js` the shell died of SIGTERM without passing it on (the host stayed up,
// re-parented, serving the port: issue 18) and caught SIGINT while it waited (nothing stopped). package.json
// therefore runs this script with `exec`: the shell becomes this process, npm's forwarded signal reaches it, and
// main.js stops the host and Azurite. A signal during the build stops the build, and nothing starts.
'use strict';
const { spawn } = require('node:child_process');
const path = require('node:path');

const root = path.join(__dirname, '..');
const npmCli = process.env.npm_execpath;
const build =
  npmCli && /\.[cm]?js$/.test(npmCli)
    ? spawn(process.execPath, [npmCli, 'run', 'build'], { cwd: root, stdio: 'inherit' })
    : spawn('npm', ['run', 'build'], { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });

let stoppedBy;
const stopBuild = (signal) => {
  stoppedBy = signal;
  build.kill(signal);
};
process.on('SIGINT', stopBuild);
process.on('SIGTERM', stopBuild);

build.on('exit', (code, signal) => {
  process.off('SIGINT', stopBuild);
  process.off('SIGTERM', stopBuild);
  if (stoppedBy || signal || code !== 0) process.exit(code ?? 1);
  require(path.join(root, 'dist', 'local', 'main.js'));
});
