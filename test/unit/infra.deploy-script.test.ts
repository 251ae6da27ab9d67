// infra/deploy.sh and the step scripts in infra/scripts/ (also run by the azd hooks). No az CLI exists here, so
// the checks read the text, plus run the pure-bash helpers (go-sqlcmd detection, the time bound) with stand-in
// binaries on PATH.

import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { INFRA } from '../support/bicep';

const DEPLOY = join(INFRA, 'deploy.sh');
const SCRIPTS = join(INFRA, 'scripts');
const shellFiles = () => [
  DEPLOY,
  ...readdirSync(SCRIPTS).filter((f) => f.endsWith('.sh')).map((f) => join(SCRIPTS, f)),
  ...readdirSync(join(INFRA, 'azd')).filter((f) => f.endsWith('.sh')).map((f) => join(INFRA, 'azd', f)),
];
const deploy = readFileSync(DEPLOY, 'utf8');
const allShell = () => shellFiles().map((f) => readFileSync(f, 'utf8')).join('\n');

/** The `if` line enclosing line `at` (same-or-lower indentation, not closed by its `fi`), and whether `at` is in its else branch. */
function enclosingIf(lines: string[], at: number): { condition: string; inElse: boolean } | undefined {
  const indent = (l: string) => /^\s*/.exec(l)![0].length;
  let inElse = false;
  for (let k = at - 1; k >= 0; k--) {
    const line = lines[k]!;
    if (indent(line) >= indent(lines[at]!)) continue;
    if (/^\s*else\b/.test(line)) inElse = true;
    else if (/^\s*fi\b/.test(line)) return undefined;
    else if (/^\s*if\b/.test(line)) return { condition: line.trim(), inElse };
  }
  return undefined;
}

const bash = (script: string, env: NodeJS.ProcessEnv = process.env) =>
  spawnSync('/bin/bash', ['-c', script], { encoding: 'utf8', env, cwd: join(INFRA, '..'), timeout: 20_000 });

describe('infra/deploy.sh', () => {
  it('parses (bash -n), like every script it runs', () => {
    for (const file of shellFiles()) {
      const r = spawnSync('bash', ['-n', file], { encoding: 'utf8' });
      expect(r.status, `${file}: ${r.stderr}`).toBe(0);
    }
  });

  it('is shellcheck-clean (when shellcheck is installed)', () => {
    if (spawnSync('shellcheck', ['--version']).status !== 0) {
      console.log('skipped: shellcheck is not installed (apt-get install shellcheck)');
      return;
    }
    const r = spawnSync('shellcheck', ['-x', ...shellFiles().map((f) => f.slice(join(INFRA, '..').length + 1))], {
      encoding: 'utf8',
      cwd: join(INFRA, '..'),
    });
    expect(r.stdout + r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('creates the resource group only when `az group exists` says it does not (a create clears its tags)', () => {
    const lines = deploy.split('\n');
    const creates = lines.flatMap((l, i) => (/\baz group create\b/.test(l) && !/^\s*#/.test(l) ? [i] : []));
    expect(creates.length).toBe(1);
    const around = enclosingIf(lines, creates[0]!);
    expect(around?.condition).toMatch(/az group exists/);
    expect(around?.condition).toMatch(/== "true"/);
    expect(around?.inElse, 'az group create sits in the "does not exist" branch').toBe(true);
  });

  it('never picks "the first" server or vault of the group', () => {
    const text = allShell();
    for (const pick of ['az sql server list', 'az keyvault list', 'az resource list', "'[0]"]) expect(text).not.toContain(pick);
    expect(text).toMatch(/--template-file infra\/modules\/names\.bicep/);
  });

  it('reads an existing server admin with --expand-ad-admin and tells the Bicep whether the server exists', () => {
    const shows = allShell().split('\n').filter((l) => /\baz sql server show\b/.test(l) && !/^\s*#/.test(l));
    expect(shows.length).toBeGreaterThan(0);
    for (const l of shows) expect(l).toContain('--expand-ad-admin');
    expect(deploy).toMatch(/"sqlServerExists=\$sql_server_exists"/);
  });

  it('reads only names that infra/modules/names.bicep outputs', () => {
    const names = readFileSync(join(INFRA, 'modules', 'names.bicep'), 'utf8');
    const declared = new Set([...names.matchAll(/^output\s+(\w+)\s/gm)].map((m) => m[1]!));
    const read = [...readFileSync(join(SCRIPTS, 'existing.sh'), 'utf8').matchAll(/names\.json" (\w+)\.value/g)].map((m) => m[1]!);
    expect(read.sort()).toEqual(['keyVault', 'sqlServer']);
    for (const n of read) expect(declared, n).toContain(n);
  });

  it('bounds config-zip and checks the deployment status before uploading again', () => {
    const lines = deploy.split('\n');
    const zip = lines.findIndex((l) => /az functionapp deployment source config-zip/.test(l) && !/^\s*#/.test(l));
    expect(zip).toBeGreaterThan(0);
    const call = lines.slice(zip, zip + 2).join(' ');
    expect(call).toMatch(/run_bounded \d+ az functionapp deployment source config-zip/);
    expect(call).toMatch(/--timeout \d+/);
    const retry = lines.findIndex((l, i) => i > zip && /sleep 60/.test(l));
    const check = lines.findIndex((l, i) => i > zip && /wait_for_latest_deployment/.test(l));
    expect(check).toBeGreaterThan(zip);
    expect(check).toBeLessThan(retry);
  });

  it('run_bounded stops a command that runs too long (exit 124), with and without coreutils timeout', () => {
    const started = Date.now();
    const r = bash('. infra/scripts/common.sh; run_bounded 1 sleep 10; echo "rc=$?"');
    expect(r.stdout.trim()).toBe('rc=124');
    // without timeout(1) on PATH (macOS): the bash fallback
    const bin = mkdtempSync(join(tmpdir(), 'nobound-'));
    symlinkSync(spawnSync('bash', ['-c', 'command -v sleep'], { encoding: 'utf8' }).stdout.trim(), join(bin, 'sleep'));
    const f = bash('. infra/scripts/common.sh; run_bounded 1 sleep 10; echo "rc=$?"; run_bounded 5 sleep 0; echo "ok=$?"', { PATH: bin });
    expect(f.stdout.trim().split('\n')).toEqual(['rc=124', 'ok=0']);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('requires go-sqlcmd and refuses the ODBC sqlcmd (no --authentication-method)', () => {
    const bin = mkdtempSync(join(tmpdir(), 'sqlcmd-'));
    const fake = (usage: string) => {
      writeFileSync(join(bin, 'sqlcmd'), `#!/bin/sh\necho '${usage}'\n`);
      chmodSync(join(bin, 'sqlcmd'), 0o755);
    };
    const check = () => bash('. infra/scripts/common.sh; need_go_sqlcmd && echo accepted', { PATH: `${bin}:/usr/bin:/bin` });
    fake('usage: sqlcmd [-U login id] [-P password] [-G use Azure Active Directory]'); // ODBC
    const odbc = check();
    expect(odbc.status).not.toBe(0);
    expect(odbc.stderr).toMatch(/not go-sqlcmd/);
    fake('  --authentication-method string   Specifies the SQL authentication method'); // go-sqlcmd
    expect(check().stdout.trim()).toBe('accepted');
    for (const file of [DEPLOY, join(SCRIPTS, 'grant-app-identity.sh')]) expect(readFileSync(file, 'utf8')).toMatch(/need_go_sqlcmd/);
  });
});
