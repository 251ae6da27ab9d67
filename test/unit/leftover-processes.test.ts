import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { leftovers, type ProcessInfo } from '../leftover-processes';

const root = path.resolve(__dirname, '../..');
const proc = (pid: number, ppid: number, cmdline: string, cwd = '/'): ProcessInfo => ({ pid, ppid, cmdline, cwd });

describe('the left-process check', () => {
  // pid 1 init; 100 a tool daemon older than the run; this run is process.pid (under 100)
  const me = process.pid;
  const base = [proc(1, 0, 'init'), proc(100, 1, 'daemon'), proc(me, 100, 'vitest', root)];
  const before = new Set([1, 100, me, 200]);

  it('names an orphaned host of this checkout started during the run, and its child', () => {
    const host = proc(900_001, 1, `node ${root}/dist/local/host.js`);
    const azurite = proc(900_002, 900_001, 'azurite --silent', `${root}/.azurite`);
    expect(leftovers(before, [...base, host, azurite]).map((p) => p.pid)).toEqual([900_001, 900_002]);
  });

  it("leaves alone this run's own workers, other checkouts, and processes an older process still owns (a second run or a shell in the same folder)", () => {
    const worker = proc(900_010, me, `node ${root}/node_modules/vitest/dist/workers/forks.js`, root);
    const otherCheckout = proc(900_011, 1, 'node /elsewhere/dist/local/host.js', '/elsewhere');
    const otherRun = [proc(200, 100, 'npm test', root), proc(900_012, 200, `node ${root}/node_modules/vitest/dist/workers/forks.js`, root)];
    const shell = proc(900_013, 100, 'bash', root);
    // another checkout whose node_modules is a symlink to this one's: its workers name this checkout's node_modules
    const sharing = proc(900_014, 1, `node ${root}/node_modules/vitest/dist/workers/forks.js`, '/elsewhere');
    expect(leftovers(before, [...base, worker, otherCheckout, ...otherRun, shell, sharing])).toEqual([]);
  });
});
