// The suite must leave no process behind (issue 27: after one CI run, seven Azurite processes of killed hosts were
// still running an hour later). The global setup notes the processes that exist before the run; its teardown looks
// for processes that appeared since, outlived the run, and belong to this checkout (their command line names its
// folder or they run in it: a host, an Azurite, an npm start, a schema CLI), gives them a few seconds to finish exiting, then ends
// them by id and fails the run naming each one. Other checkouts' and other people's processes are never looked at, nor
// are processes of this checkout that something older than the run still owns (a second test run or a shell working
// in the same folder at the same time): a leftover is orphaned, its topmost ancestor below init new since the run began.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import * as path from 'node:path';

const root = path.resolve(__dirname, '..');

export interface ProcessInfo {
  pid: number;
  ppid: number;
  cmdline: string;
  /** Its working folder ('' when not readable). */
  cwd: string;
}

/** Every process this user can see (Linux /proc); undefined elsewhere. */
export function processes(): ProcessInfo[] | undefined {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return undefined;
  }
  const out: ProcessInfo[] = [];
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const after = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (after[0] === 'Z') continue; // a zombie runs nothing
      const cmdline = readFileSync(`/proc/${e}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      let cwd = '';
      try {
        cwd = readlinkSync(`/proc/${e}/cwd`);
      } catch {
        // another user's process
      }
      out.push({ pid: Number(e), ppid: Number(after[1]), cmdline, cwd });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** `pid` and every process below it. */
function tree(all: readonly ProcessInfo[], pid: number): Set<number> {
  const out = new Set([pid]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const p of all) if (out.has(p.ppid) && !out.has(p.pid)) (out.add(p.pid), (grew = true));
  }
  return out;
}

/** The topmost ancestor of `p` below init (p itself when its parent is init or gone). */
function topmost(byPid: ReadonlyMap<number, ProcessInfo>, p: ProcessInfo): number {
  let at = p;
  for (let hops = 0; hops < 1000; hops++) {
    const parent = byPid.get(at.ppid);
    if (!parent || parent.pid <= 1) return at.pid;
    at = parent;
  }
  return at.pid;
}

/**
 * Processes of this checkout that were not there in `before`, outside this process's own tree (its workers), and
 * orphaned by the run: their topmost ancestor below init is not older than the run (so not another run's worker).
 */
export function leftovers(before: ReadonlySet<number>, all: readonly ProcessInfo[] = processes() ?? []): ProcessInfo[] {
  const mine = tree(all, process.pid);
  const byPid = new Map(all.map((p) => [p.pid, p]));
  // a command line that names this checkout's node_modules only is another checkout sharing them (a symlink)
  const names = (cmdline: string) => cmdline.split(`${root}/`).slice(1).some((rest) => !rest.startsWith('node_modules/'));
  const ours = (p: ProcessInfo) => names(p.cmdline) || p.cwd === root || p.cwd.startsWith(`${root}/`);
  return all.filter((p) => !before.has(p.pid) && !mine.has(p.pid) && ours(p) && !before.has(topmost(byPid, p)));
}

/** Waits up to `graceMs` for leftovers to exit; ends the rest by id and returns them. */
export async function endLeftovers(before: ReadonlySet<number>, graceMs = 10_000): Promise<ProcessInfo[]> {
  const deadline = Date.now() + graceMs;
  let left = leftovers(before);
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    left = leftovers(before);
  }
  for (const p of left) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  return left;
}
