// The local host as `npm start` runs it (dist/local/main.js; scripts/start.js requires it in its own process), in a
// folder of its own with its own local.settings.json (issue 27): a misspelt global setting is named at start-up with
// the setting it is meant to be; a bad setting prints its message without a stack trace; timers do not log an
// Executing / Executed pair every few seconds unless LOCAL_TIMER_LOG=true.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './host-process';

const root = path.resolve(__dirname, '../..');
let dir = '';
let proc: ChildProcess | undefined;

beforeAll(() => {
  execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root });
  dir = mkdtempSync(path.join(tmpdir(), 'host-start-'));
});
afterEach(async () => {
  if (proc && proc.exitCode === null && proc.signalCode === null) {
    const exited = new Promise((r) => proc!.once('exit', r));
    proc.kill('SIGTERM');
    await exited;
  }
  proc = undefined;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts the host in `dir`; resolves with its output once `until` matches it or it exits. */
async function host(env: Record<string, string>, values: Record<string, string> | undefined, until: RegExp, waitMs = 90_000): Promise<{ output: () => string; exitCode: () => number | null }> {
  if (values) writeFileSync(path.join(dir, 'local.settings.json'), JSON.stringify({ IsEncrypted: false, Values: values }));
  else rmSync(path.join(dir, 'local.settings.json'), { force: true });
  const port = await freePort();
  const base: Record<string, string | undefined> = { ...process.env };
  for (const k of Object.keys(base)) if (/^(QUEUES?|MAX_DELIVERY_ATTEMPTS?|LOCAL_TIMER_LOG|DRAIN_TRIGGER|LOG_LEVEL)$/.test(k)) delete base[k];
  proc = spawn(process.execPath, [path.join(root, 'dist/local/main.js')], {
    cwd: dir,
    env: { ...base, PORT: String(port), PGLITE_DATA_DIR: 'memory://', LOCAL_FUNCTION_KEY: '', AzureWebJobsStorage: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const started = Date.now();
  const p = proc;
  while (!until.test(out) && p.exitCode === null && Date.now() - started < waitMs) await new Promise((r) => setTimeout(r, 100));
  if (p.exitCode === null && !until.test(out)) throw new Error(`the host did not print ${until} within ${waitMs} ms:\n${out}`);
  return { output: () => out, exitCode: () => p.exitCode };
}

describe('npm start: settings slips, start-up errors, quiet timers', { timeout: 180_000 }, () => {
  it('names a misspelt global setting from local.settings.json with the setting it is meant to be', async () => {
    const h = await host({ DRAIN_TRIGGER: 'timer', LOCAL_AZURITE: 'false' }, { FUNCTIONS_WORKER_RUNTIME: 'node', QUEUE: 'worker,billing', MAX_DELIVERY_ATTEMPT: '3', MY_OWN_SETTING: 'x' }, /Host listening on/);
    const out = h.output();
    expect(out).toContain('QUEUE (in local.settings.json) is not a setting this app reads (did you mean QUEUES?); it is ignored');
    expect(out).toContain('MAX_DELIVERY_ATTEMPT (in local.settings.json) is not a setting this app reads (did you mean MAX_DELIVERY_ATTEMPTS?)');
    expect(out).not.toContain('MY_OWN_SETTING');
    expect(out).not.toMatch(/\bPATH\b.*not a setting/);
  });

  it('a bad setting at start-up prints its message, not a stack trace', async () => {
    const h = await host({ DRAIN_TRIGGER: 'timer', LOCAL_AZURITE: 'false', MAX_DELIVERY_ATTEMPTS: 'abc' }, undefined, /must be an integer/);
    while (h.exitCode() === null) await new Promise((r) => setTimeout(r, 50));
    expect(h.exitCode()).toBe(1);
    expect(h.output()).toContain("MAX_DELIVERY_ATTEMPTS='abc' must be an integer from 0 to 1000");
    expect(h.output()).not.toMatch(/^\s+at /m);
  });

  it('timer mode is quiet by default; LOCAL_TIMER_LOG=true logs every Executing / Executed pair', async () => {
    const env = { DRAIN_TRIGGER: 'timer', LOCAL_AZURITE: 'false', DRAIN_WORKER_SCHEDULE: '*/1 * * * * *', DRAIN_BUDGET_SECONDS: '1', DRAIN_IDLE_GRACE_SECONDS: '0.1' };
    const quiet = await host(env, undefined, /Host listening on/);
    await new Promise((r) => setTimeout(r, 4000)); // four drain-worker firings
    expect(quiet.output()).not.toMatch(/Executing 'Functions\.drain-worker'/);
    expect(quiet.output()).not.toMatch(/Executed 'Functions\.drain-worker'/);
    proc!.kill('SIGTERM');
    await new Promise((r) => proc!.once('exit', r));
    const loud = await host({ ...env, LOCAL_TIMER_LOG: 'true' }, undefined, /Executed 'Functions\.drain-worker' \(Succeeded/);
    expect(loud.output()).toMatch(/Executing 'Functions\.drain-worker' \(Reason='Timer fired at/);
  });
});
