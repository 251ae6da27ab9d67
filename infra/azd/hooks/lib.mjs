// Shared by the azd hooks in this folder (azure.yaml runs them with `node`, from the posix and the windows blocks
// alike, so there is one implementation for Linux, macOS and Windows). Plain Node.js, builtins only: the hooks
// run before `npm install` on a fresh clone.
//
// Every hook's main() takes a context instead of reading process globals, so the tests can run it with stand-in
// az/azd/sqlcmd binaries, another platform, a fake clock and a fake network:
//   env        the environment (azd passes the azd environment and, after provisioning, the Bicep outputs)
//   platform   process.platform ('win32' runs commands through cmd.exe, for az.cmd and npm.cmd)
//   root       the project root (where azure.yaml is)
//   spawn      child_process.spawnSync or a stand-in with its signature
//   fetch      globalThis.fetch or a stand-in (IP lookup, health check)
//   sleep      (ms) => Promise
//   log        (line) => void, progress to stderr (azd shows hook output)
//   nodeBin    the node executable for the schema step (process.execPath)

import { spawnSync } from 'node:child_process';
import { realpathSync, statSync } from 'node:fs';
import { delimiter as posixDelimiter, join, dirname, posix, win32 } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

export class HookError extends Error {}
export const die = (message) => {
  throw new HookError(message);
};

export function defaultContext() {
  return {
    env: { ...process.env },
    platform: process.platform,
    root: ROOT,
    spawn: spawnSync,
    fetch: globalThis.fetch,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    log: (line) => process.stderr.write(`${line}\n`),
    nodeBin: process.execPath,
    nodeVersion: process.versions.node,
  };
}

/**
 * Runs main(defaultContext()) when the file is the node entry point; exit 1 with the message on failure. The entry
 * is compared by real path: Node's ESM loader resolves symlinks in import.meta.url, process.argv[1] keeps them, and
 * a mismatch would skip the hook silently (exit 0).
 */
export function runIfMain(metaUrl, main) {
  if (!process.argv[1]) return;
  let entry;
  try {
    entry = pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return;
  }
  if (entry !== metaUrl) return;
  main(defaultContext()).then(
    () => process.exit(0),
    (err) => {
      process.stderr.write(`error: ${err instanceof HookError ? err.message : (err?.stack ?? err)}\n`);
      process.exit(1);
    },
  );
}

/** An environment variable; on Windows the names are case-insensitive (Path, PATHEXT). */
export function getEnv(ctx, name) {
  if (ctx.platform !== 'win32') return ctx.env[name];
  const key = Object.keys(ctx.env).find((k) => k.toUpperCase() === name.toUpperCase());
  return key === undefined ? undefined : ctx.env[key];
}

/** The file `name` resolves to on PATH (with PATHEXT on Windows), or undefined. */
export function findOnPath(ctx, name) {
  const win = ctx.platform === 'win32';
  const dirs = (getEnv(ctx, 'PATH') ?? '').split(win ? win32.delimiter : posixDelimiter).filter(Boolean);
  const exts = win ? (getEnv(ctx, 'PATHEXT') ?? '.COM;.EXE;.BAT;.CMD').split(';').filter(Boolean) : [''];
  for (const dir of dirs) {
    for (const ext of exts) {
      const file = (win ? win32 : posix).join(dir, name + ext);
      try {
        const st = statSync(win ? file.replace(/\\/g, '/') : file);
        // on POSIX only an executable file counts (mode bits), on Windows the extension decides
        if (st.isFile() && (win || (st.mode & 0o111) !== 0)) return file;
      } catch {
        // not in this directory
      }
    }
  }
  return undefined;
}

// cmd.exe quoting, as cross-spawn does it: each argument is quoted by the MSVC rules (backslashes before a quote
// doubled), then every cmd metacharacter, quotes included, is escaped with ^ so cmd passes it on literally.
const CMD_META = /([()\][%!^"`<>&|;, *?])/g;
export function quoteForCmd(arg) {
  let a = String(arg);
  a = a.replace(/(\\*)"/g, '$1$1\\"');
  a = a.replace(/(\\*)$/, '$1$1');
  return `"${a}"`.replace(CMD_META, '^$1');
}
export const escapeCmdCommand = (cmd) => String(cmd).replace(CMD_META, '^$1');

/**
 * The file and arguments that run `cmd args` on the context's platform. On Windows a command named without a
 * path (az is az.cmd, npm is npm.cmd: batch files, which Node no longer starts without a shell) goes through
 * cmd.exe, which finds it through PATHEXT; an absolute path to an .exe (node itself) is started directly.
 */
export function commandLine(ctx, cmd, args) {
  if (ctx.platform !== 'win32' || (win32.isAbsolute(cmd) && /\.exe$/i.test(cmd))) return { file: cmd, args, verbatim: false };
  if (/[\\/ ]/.test(cmd)) die(`cannot run ${cmd} through cmd.exe: name a command on PATH or an absolute .exe`);
  const line = [escapeCmdCommand(cmd), ...args.map(quoteForCmd)].join(' ');
  return { file: getEnv(ctx, 'ComSpec') ?? 'cmd.exe', args: ['/d', '/s', '/c', `"${line}"`], verbatim: true };
}

/**
 * Runs a command, capturing its output (or passing it through with `inherit`). Throws a HookError on a non-zero
 * exit unless `allowFail`. `unset` removes variables from the child's environment.
 */
export function run(ctx, cmd, args, { allowFail = false, inherit = false, unset = [], extraEnv = {}, what } = {}) {
  const env = { ...ctx.env, ...extraEnv };
  for (const name of unset) for (const k of Object.keys(env)) if (k.toUpperCase() === name.toUpperCase()) delete env[k];
  const { file, args: argv, verbatim } = commandLine(ctx, cmd, args);
  const r = ctx.spawn(file, argv, {
    cwd: ctx.root,
    env,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    windowsHide: true,
    windowsVerbatimArguments: verbatim,
    stdio: inherit ? ['ignore', 'inherit', 'inherit'] : ['ignore', 'pipe', 'pipe'],
  });
  const result = { status: r.status ?? (r.error ? 127 : 1), stdout: r.stdout ?? '', stderr: r.stderr ?? (r.error ? String(r.error.message) : '') };
  if (result.status !== 0 && !allowFail) {
    die(`${what ?? `${cmd} ${args[0] ?? ''}`} failed (exit ${result.status}): ${result.stderr.trim() || result.stdout.trim()}`);
  }
  return result;
}

/** The subscription azd deploys to (never the Azure CLI's default one). */
export function subscription(ctx) {
  const sub = ctx.env.AZURE_SUBSCRIPTION_ID;
  if (!sub) die('AZURE_SUBSCRIPTION_ID is not set: run azd env set AZURE_SUBSCRIPTION_ID <subscription id> (or export it)');
  return sub;
}

/** `az …` in azd's subscription: every call gets --subscription AZURE_SUBSCRIPTION_ID. */
export function az(ctx, args, opts = {}) {
  return run(ctx, 'az', [...args, '--subscription', subscription(ctx)], { what: `az ${args.slice(0, 3).join(' ')}`, ...opts });
}

/** The azd environment the hook runs for (azd sets AZURE_ENV_NAME for hooks). */
export function envName(ctx) {
  const name = ctx.env.AZURE_ENV_NAME;
  if (!name) die('AZURE_ENV_NAME is not set: run the hooks through azd (azd up / azd provision / azd deploy)');
  return name;
}

/**
 * `azd env set KEY VALUE -e <env>`, and the value in ctx.env for the rest of the hook. The environment is named
 * because a bare `azd env set` writes to the default environment, not necessarily the one `azd up -e` runs.
 */
export function azdEnvSet(ctx, key, value) {
  run(ctx, 'azd', ['env', 'set', key, value, '-e', envName(ctx)], { what: `azd env set ${key}` });
  ctx.env[key] = value;
}

export const say = (ctx, line) => ctx.log(`== ${line}`);

/** A lookup that failed because the resource is not there (and for no other reason). */
export const isNotFound = (text) => /not ?found|ResourceNotFound|could not be found|ResourceGroupNotFound/i.test(text);

/** Checks the tools every hook needs, before anything else runs (review A4). */
export function checkTools(ctx, { sqlcmd = true } = {}) {
  const [major] = String(ctx.nodeVersion ?? '0').split('.').map(Number);
  if (!(major >= 20)) die(`Node.js 20 or later is needed (this is ${ctx.nodeVersion})`);
  const need = [
    ['az', 'the Azure CLI: https://learn.microsoft.com/cli/azure/install-azure-cli'],
    ['azd', 'the Azure Developer CLI: https://aka.ms/azd'],
    ['npm', 'comes with Node.js'],
  ];
  if (sqlcmd) need.push(['sqlcmd', 'go-sqlcmd: https://github.com/microsoft/go-sqlcmd']);
  const missing = need.filter(([name]) => !findOnPath(ctx, name));
  if (missing.length) die(`missing tools: ${missing.map(([n, how]) => `${n} (${how})`).join('; ')}`);
  if (sqlcmd) {
    // The ODBC sqlcmd has the same name but no --authentication-method (the grant step needs it).
    const help = run(ctx, 'sqlcmd', ['--help'], { allowFail: true });
    if (!`${help.stdout}${help.stderr}`.includes('--authentication-method')) {
      die('the sqlcmd on PATH is not go-sqlcmd (it has no --authentication-method); install https://github.com/microsoft/go-sqlcmd or put it first on PATH');
    }
  }
}

/** Your public IPv4 as https://api.ipify.org sees it, or '' when it cannot be found (10 s). */
export async function lookupPublicIp(ctx) {
  try {
    const res = await ctx.fetch('https://api.ipify.org', { signal: AbortSignal.timeout(10_000) });
    const text = res.ok ? (await res.text()).trim() : '';
    return /^\d{1,3}(\.\d{1,3}){3}$/.test(text) ? text : '';
  } catch {
    return '';
  }
}

/**
 * The deployer IP for the SQL firewall rule (review B1): DEPLOYER_IP_PIN when you pinned one, else looked up on
 * every run (an address stored on the first run goes stale on another network). Writes DEPLOYER_IP, which
 * infra/azd/main.parameters.json passes to the Bicep. Returns { ip, changed }.
 */
export async function refreshDeployerIp(ctx) {
  const before = ctx.env.DEPLOYER_IP ?? '';
  const pinned = ctx.env.DEPLOYER_IP_PIN ?? '';
  const ip = pinned || (await lookupPublicIp(ctx));
  if (!ip) {
    ctx.log(`warning: could not find your public IP${before ? `; keeping DEPLOYER_IP ${before}` : ''} (azd env set DEPLOYER_IP_PIN <ip> to set it)`);
    return { ip: before, changed: false };
  }
  if (ip !== before) azdEnvSet(ctx, 'DEPLOYER_IP', ip);
  return { ip, changed: ip !== before };
}

/** Variables that would make the deployer's database steps authenticate as someone else (see infra/scripts/common.sh). */
export const NOT_AS_DEPLOYER = ['AZURE_CLIENT_ID', 'AZURE_CLIENT_SECRET', 'DATABASE_URL', 'SQL_CONNECTION_STRING', 'SQL_USER', 'SQL_PASSWORD'];

export function required(ctx, names, hint) {
  const missing = names.filter((n) => !ctx.env[n]);
  if (missing.length) die(`${missing.join(', ')} not set (${hint})`);
  return names.map((n) => ctx.env[n]);
}
