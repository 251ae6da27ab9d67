// Runs the azd hooks (infra/azd/hooks/*.mjs) in-process with stand-in commands: a temporary bin folder whose
// az/azd/sqlcmd/npm/node are shell wrappers around test/support/fake-cli.cjs (every call recorded with its
// arguments, answers from rules), a fake network (IP lookup, health check) and a clock that does not wait.
// platform 'win32' runs the hooks' Windows path: their commands go through `cmd.exe /d /s /c "…"`, which this
// harness decodes the way cmd.exe and the MSVC runtime do, then runs the stand-in.

import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export const HOOKS = join(__dirname, '..', '..', 'infra', 'azd', 'hooks');
const FAKE = join(__dirname, 'fake-cli.cjs');

export interface Rule {
  cmd: string;
  args?: string[];
  contains?: string[];
  stdout?: string;
  stderr?: string;
  status?: number;
  times?: number;
}
export interface Call {
  cmd: string;
  args: string[];
  env: Record<string, string>;
}
export interface FakeResponse {
  status: number;
  body: string;
}

/**
 * What a program started by `cmd.exe /d /s /c "<line>"` receives as argv: first cmd.exe's pass (outside double
 * quotes ^x is a literal x and an unescaped & | < > ends the command, which the hooks must never produce; inside
 * quotes everything is literal), then the MSVC runtime's split into arguments (CommandLineToArgvW rules).
 */
export function decodeCmdLine(line: string): string[] {
  let passed = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (!quoted && c === '^') {
      passed += line[++i] ?? '';
    } else {
      if (!quoted && '&|<>'.includes(c)) throw new Error(`cmd.exe would treat the unescaped ${c} in ${line} as an operator`);
      if (c === '"') quoted = !quoted;
      passed += c;
    }
  }
  return msvcSplit(passed);
}

function msvcSplit(text: string): string[] {
  const args: string[] = [];
  let cur = '';
  let inArg = false;
  let quoted = false;
  for (let i = 0; i < text.length; ) {
    const c = text[i]!;
    if ((c === ' ' || c === '\t') && !quoted) {
      if (inArg) args.push(cur);
      cur = '';
      inArg = false;
      i++;
      continue;
    }
    inArg = true;
    if (c === '\\') {
      let n = 0;
      while (text[i] === '\\') {
        n++;
        i++;
      }
      if (text[i] === '"') {
        cur += '\\'.repeat(Math.floor(n / 2));
        if (n % 2 === 1) {
          cur += '"';
          i++;
        }
      } else cur += '\\'.repeat(n);
    } else if (c === '"') {
      quoted = !quoted;
      i++;
    } else {
      cur += c;
      i++;
    }
  }
  if (inArg) args.push(cur);
  return args;
}

export interface Harness {
  ctx: Record<string, unknown> & { env: Record<string, string> };
  calls: () => Call[];
  logs: string[];
  sleeps: number[];
  fetched: string[];
  bin: string;
}

export function harness(opts: {
  env: Record<string, string>;
  rules?: Rule[];
  platform?: 'linux' | 'darwin' | 'win32';
  tools?: string[];
  ip?: string[];
  health?: FakeResponse[];
}): Harness {
  const platform = opts.platform ?? 'linux';
  const dir = mkdtempSync(join(tmpdir(), 'azd-hooks-'));
  const bin = join(dir, 'bin');
  spawnSync('mkdir', ['-p', bin]);
  for (const name of opts.tools ?? ['az', 'azd', 'sqlcmd', 'npm', 'node']) {
    const file = join(bin, name);
    writeFileSync(file, `#!/bin/sh\nexec "${process.execPath}" "${FAKE}" ${name} "$@"\n`);
    chmodSync(file, 0o755);
    // upper case like PATHEXT: Windows file names ignore case, the Linux running this test does not
    if (platform === 'win32') writeFileSync(`${file}.CMD`, '@rem stand-in (the harness runs the extension-less twin)\r\n');
  }
  const rules: Rule[] = [{ cmd: 'sqlcmd', args: ['--help'], stdout: '  --authentication-method string   Specifies the SQL authentication method\n' }, ...(opts.rules ?? [])];
  const rulesFile = join(dir, 'rules.json');
  writeFileSync(rulesFile, JSON.stringify(rules));
  const logFile = join(dir, 'calls.jsonl');
  const fakeEnv = { FAKE_CLI_LOG: logFile, FAKE_CLI_RULES: rulesFile };

  const realSpawn = (file: string, args: string[], o: SpawnSyncOptions) =>
    spawnSync(file, args, { ...o, env: { ...o.env, ...fakeEnv } });
  const winSpawn = (file: string, args: string[], o: SpawnSyncOptions) => {
    if (file !== 'cmd.exe' || args.length !== 4 || args.slice(0, 3).join(' ') !== '/d /s /c' || !o.windowsVerbatimArguments) {
      throw new Error(`the Windows path must go through cmd.exe /d /s /c with verbatim arguments, got ${file} ${args.join(' ')}`);
    }
    const line = args[3]!;
    if (!line.startsWith('"') || !line.endsWith('"')) throw new Error(`unquoted cmd.exe line ${line}`);
    const [cmd, ...argv] = decodeCmdLine(line.slice(1, -1));
    // cmd.exe finds the command on Path through PATHEXT; the stand-in is the extension-less twin of <cmd>.CMD
    const found = (o.env?.Path ?? '').split(';').map((d) => join(d, cmd!)).find((f) => existsSync(`${f}.CMD`));
    if (!found) return { status: 9009, stdout: '', stderr: `'${cmd}' is not recognized as an internal or external command`, pid: 0, output: [], signal: null };
    return realSpawn(found, argv, { ...o, windowsVerbatimArguments: false });
  };

  const env: Record<string, string> = platform === 'win32' ? { Path: bin, PATHEXT: '.COM;.EXE;.BAT;.CMD', ...opts.env } : { PATH: bin, ...opts.env };
  const ip = [...(opts.ip ?? [])];
  const health = [...(opts.health ?? [])];
  const logs: string[] = [];
  const sleeps: number[] = [];
  const fetched: string[] = [];
  const fetch = async (url: string) => {
    fetched.push(url);
    const answer = url === 'https://api.ipify.org' ? (ip.length ? { status: 200, body: ip.shift()! } : undefined) : health.shift();
    if (!answer) throw new Error(`fetch ${url}: no answer (network off)`);
    return { ok: answer.status >= 200 && answer.status < 300, status: answer.status, text: async () => answer.body };
  };
  return {
    ctx: {
      env,
      platform,
      root: join(__dirname, '..', '..'),
      spawn: platform === 'win32' ? winSpawn : realSpawn,
      fetch,
      sleep: async (ms: number) => {
        sleeps.push(ms);
      },
      log: (line: string) => logs.push(line),
      nodeBin: 'node',
      nodeVersion: '20.20.2',
    },
    calls: () =>
      existsSync(logFile)
        ? readFileSync(logFile, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Call)
        : [],
    logs,
    sleeps,
    fetched,
    bin,
  };
}

/** A hook module's exports (plain JS, so typed loosely here). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function loadHook(name: string): Promise<any> {
  return import(pathToFileURL(join(HOOKS, `${name}.mjs`)).href);
}
