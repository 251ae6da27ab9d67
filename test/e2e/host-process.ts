// A local host in a process of its own (dist/local/main.js, as a second Function instance would be), for the e2e
// files that run two of them on one database server. Build first (tsc -p tsconfig.build.json).
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import * as path from 'node:path';
import { eventually } from '../support/messages';
import { checkedFetch } from './app-harness';

const root = path.resolve(__dirname, '../..');

export interface HostProcess {
  /** …/api */
  url: string;
  proc: ChildProcess;
  /** stdout and stderr as they came */
  output: string[];
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** Starts a host with the environment plus `settings` on a free port; resolves once its health route answers 200. */
export async function startHostProcess(settings: Record<string, string | undefined>, healthTimeoutMs = 30_000): Promise<HostProcess> {
  const port = await freePort();
  const output: string[] = [];
  const proc = spawn(process.execPath, [path.join(root, 'dist/local/main.js')], {
    cwd: root,
    env: { ...process.env, LOCAL_FUNCTION_KEY: '', ...settings, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.on('data', (d: Buffer) => output.push(d.toString()));
  proc.stderr!.on('data', (d: Buffer) => output.push(d.toString()));
  const url = `http://127.0.0.1:${port}/api`;
  await eventually(async () => (await checkedFetch(`${url}/health`)).status === 200, `host on :${port} to be healthy`, healthTimeoutMs, 100);
  return { url, proc, output };
}

/** SIGTERM, then waits for the process to exit. */
export async function stopHostProcess(h: HostProcess | undefined): Promise<void> {
  if (!h || h.proc.exitCode !== null) return;
  const exited = new Promise((r) => h.proc.once('exit', r));
  h.proc.kill('SIGTERM');
  await exited;
}
