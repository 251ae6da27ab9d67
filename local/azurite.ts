// The embedded storage emulator of `npm start`: Azurite's queue service (the npm package, a devDependency) as a
// child process on loopback, in memory or with its data under a folder. Azurite's own telemetry is off.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';

/** Azurite's well-known development account (public, documented by Microsoft; not a secret). */
const DEV_ACCOUNT = 'devstoreaccount1';
const DEV_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

export interface Azurite {
  /** The queue endpoint, e.g. http://127.0.0.1:10001/devstoreaccount1 */
  queueEndpoint: string;
  /** An AzureWebJobsStorage value for it. */
  connectionString: string;
  stop(): Promise<void>;
}

export interface AzuriteOptions {
  /** A folder for its data, or 'memory'. */
  location: string;
  /** 0 picks a free port. */
  port?: number;
  host?: string;
}

export function azuriteConnectionString(queueEndpoint: string): string {
  return `DefaultEndpointsProtocol=http;AccountName=${DEV_ACCOUNT};AccountKey=${DEV_KEY};QueueEndpoint=${queueEndpoint};`;
}

/**
 * The child's first lines, before Azurite's own main: it ends when its host dies, however the host dies. A
 * SIGTERM'd host stops it in its 'exit' handler, but a SIGKILL or an out-of-memory kill runs no handler and used to
 * leave Azurite running for good (parent 1). The child holds the read end of a pipe whose write end only the host
 * holds: the kernel closes it when the host goes, the child sees end-of-file and stops Azurite (SIGTERM to itself:
 * Azurite's own graceful close; exit after 5 s in any case). A re-parenting check every second backs the pipe up.
 */
export const WATCH_PARENT = `
const parent = process.ppid;
const leave = () => {
  setTimeout(() => process.exit(0), 5000).unref();
  process.kill(process.pid, 'SIGTERM');
};
process.stdin.on('end', leave);
process.stdin.on('error', leave);
process.stdin.resume();
process.stdin.unref(); // watched, but never what keeps the child alive once Azurite has closed
setInterval(() => { if (process.ppid !== parent) leave(); }, 1000).unref();
const main = process.argv[1];
require(main);
`;

export async function startAzurite(o: AzuriteOptions): Promise<Azurite> {
  const main = require.resolve('azurite/dist/src/queue/main.js');
  const host = o.host ?? '127.0.0.1';
  const args = [main, '--queueHost', host, '--queuePort', String(o.port ?? 0), '--skipApiVersionCheck', '--silent', '--disableTelemetry'];
  if (o.location === 'memory') args.push('--inMemoryPersistence');
  else {
    mkdirSync(o.location, { recursive: true });
    args.push('--location', o.location);
  }
  // stdin is the pipe the child watches (WATCH_PARENT); nothing is ever written to it
  const child = spawn(process.execPath, ['-e', WATCH_PARENT, '--', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const killOnExit = () => child.kill();
  process.once('exit', killOnExit); // never leave the emulator running after the host
  void exited.then(() => process.off('exit', killOnExit));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error(`Azurite did not start within 30 s: ${out.trim()}`)), 30_000);
    const fail = (err: Error) => {
      clearTimeout(timer);
      child.kill();
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const m = /listens on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        child.stdout.off('data', onData);
        resolve(m[1]!.replace(/\/$/, ''));
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.once('exit', (code) => fail(new Error(`Azurite exited (${code}) before it listened: ${out.trim()}`)));
  });
  child.stdout.resume();
  const queueEndpoint = `${url}/${DEV_ACCOUNT}`;
  return {
    queueEndpoint,
    connectionString: azuriteConnectionString(queueEndpoint),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
