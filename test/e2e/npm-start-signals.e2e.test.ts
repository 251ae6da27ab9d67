// Issue 18: `kill -TERM <pid of npm start>` (what a process manager, `timeout npm start` or a CI script does) left
// the host and its Azurite re-parented and still serving the port: npm signals the `sh -c` it runs the script in,
// and the shell died without passing the signal on. A real `npm start` is spawned here, signalled by its PID once
// the host listens, and within 30 s the port must be free and no process it started may remain.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const root = path.join(__dirname, '../..');
let started: ChildProcess | undefined;
let tree: number[] = [];

afterEach(() => {
  // whatever survived a failed case: only the processes this test started, by id
  for (const pid of tree) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  tree = [];
  started = undefined;
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

/** `pid` and every process below it (ps: pid and ppid of every process). */
function descendants(pid: number): number[] {
  const rows = execFileSync('ps', ['-e', '-o', 'pid=,ppid='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s+/).map(Number) as [number, number]);
  const out = [pid];
  for (let i = 0; i < out.length; i++) for (const [p, pp] of rows) if (pp === out[i] && !out.includes(p)) out.push(p);
  return out;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // a zombie (ended, not yet reaped by whoever adopted it) runs nothing
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

const portAnswers = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });

async function startNpm(port: number): Promise<{ npm: ChildProcess; output: () => string }> {
  const npm = spawn('npm', ['start'], {
    cwd: root,
    env: { ...process.env, PORT: String(port), PGLITE_DATA_DIR: 'memory://', LOCAL_AZURITE_LOCATION: 'memory', LOCAL_TIMERS: 'false', AzureWebJobsStorage: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started = npm;
  let out = '';
  npm.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  npm.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const deadline = Date.now() + 150_000;
  while (!/Host listening on/.test(out)) {
    if (npm.exitCode !== null) throw new Error(`npm start exited (${npm.exitCode}) before it listened:\n${out}`);
    if (Date.now() > deadline) throw new Error(`npm start did not listen within 150 s:\n${out}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return { npm, output: () => out };
}

describe('npm start stops everything when its PID is signalled', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal} to the npm start PID frees the port and leaves no child (Azurite) running`, async () => {
      const port = await freePort();
      const { npm, output } = await startNpm(port);
      tree = descendants(npm.pid!);
      expect(output()).toMatch(/Azurite \(storage queues\) on/); // the embedded Azurite is one of them
      expect(tree.length).toBeGreaterThanOrEqual(3); // npm, the host, Azurite (and the shell npm runs it in)
      expect(await portAnswers(port)).toBe(true);

      const signalledAt = Date.now();
      process.kill(npm.pid!, signal);
      let left = tree;
      let listening = true;
      // the host lets running work end first: right after start-up that includes opening the store (PGlite and the
      // schema versions), which took over 8 s on a loaded CI machine
      while (Date.now() - signalledAt < 30_000) {
        left = tree.filter(alive);
        listening = await portAnswers(port);
        if (left.length === 0 && !listening) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect({ left, listening }, output()).toEqual({ left: [], listening: false });
      expect(output()).toContain(`${signal}: stopped.`); // the last line says the host is down (issue 27)
    }, 240_000);
  }

  it('SIGKILL of the host ends its Azurite child too (issue 27: it was left running, parent 1)', async () => {
    const port = await freePort();
    const { npm, output } = await startNpm(port);
    tree = descendants(npm.pid!);
    const cmdline = (pid: number) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      } catch {
        return '';
      }
    };
    const azurite = tree.find((pid) => cmdline(pid).includes('azurite'));
    expect(azurite, output()).toBeDefined();
    const hostPid = tree.find((pid) => descendants(pid).includes(azurite!) && pid !== azurite && cmdline(pid).includes('start.js'));
    expect(hostPid, tree.map((p) => `${p} ${cmdline(p)}`).join('\n')).toBeDefined();
    process.kill(hostPid!, 'SIGKILL'); // no handler runs: only the child's own watch can end it
    const killedAt = Date.now();
    while (alive(azurite!) && Date.now() - killedAt < 15_000) await new Promise((r) => setTimeout(r, 100));
    expect(alive(azurite!), `Azurite ${azurite} still running ${Date.now() - killedAt} ms after its host was killed`).toBe(false);
  }, 240_000);
});
