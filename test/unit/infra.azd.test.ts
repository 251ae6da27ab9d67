// azure.yaml: `azd up` provisions infra/ (through infra/azd/main.bicep, which deploys infra/main.bicep) and deploys
// the function app (host: function, Flex Consumption), running as hooks the steps that need the deployer's Entra
// identity, with the same scripts infra/deploy.sh runs. No azd runs here: the files are read and cross-checked.

import { accessSync, constants, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { blankCommentsAndStrings, closingBracket, INFRA, objectKeysAt } from '../support/bicep';

const ROOT = join(INFRA, '..');
const yaml = readFileSync(join(ROOT, 'azure.yaml'), 'utf8');
const wrapper = readFileSync(join(INFRA, 'azd', 'main.bicep'), 'utf8');
const main = readFileSync(join(INFRA, 'main.bicep'), 'utf8');

/** The lines of the YAML block under `key:` at `indent` spaces (until the next key at that indent or less). */
function yamlBlock(text: string, key: string, indent = 0): string {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l === `${' '.repeat(indent)}${key}:`);
  if (start < 0) throw new Error(`no ${key}: at indent ${indent}`);
  const out: string[] = [];
  for (const l of lines.slice(start + 1)) {
    if (l.trim() && !l.trim().startsWith('#') && /^\s*/.exec(l)![0].length <= indent) break;
    out.push(l);
  }
  return out.join('\n');
}
const value = (block: string, key: string) => new RegExp(`^\\s*${key}:\\s*(.+?)\\s*$`, 'm').exec(block)?.[1];

function params(src: string) {
  const blanked = blankCommentsAndStrings(src);
  return new Map([...blanked.matchAll(/^param\s+(\w+)\s+\w+\s*(=)?/gm)].map((m) => [m[1]!, m[2] === '=']));
}
const outputs = (src: string) => [...src.matchAll(/^output\s+(\w+)\s/gm)].map((m) => m[1]!);

describe('azure.yaml', () => {
  it('deploys one function service (Flex Consumption), built locally, to the app the Bicep names', () => {
    const api = yamlBlock(yamlBlock(yaml, 'services'), 'api', 2);
    expect(value(api, 'host')).toBe('function');
    expect(value(api, 'language')).toBe('ts');
    expect(value(api, 'project')).toBe('.');
    expect(value(api, 'remoteBuild')).toBe('false');
    expect(value(api, 'resourceName')).toBe('${FUNCTION_APP_NAME}');
    expect(outputs(wrapper)).toContain('FUNCTION_APP_NAME');
    const infra = yamlBlock(yaml, 'infra');
    expect(value(infra, 'provider')).toBe('bicep');
    expect(value(infra, 'path')).toBe('infra/azd');
    expect(value(infra, 'module')).toBe('main');
  });

  it('runs the grant and schema steps as the postprovision hook, and the existing-server checks as preprovision', () => {
    const hooks = yamlBlock(yaml, 'hooks');
    const runOf = (hook: string) => value(yamlBlock(yamlBlock(hooks, hook, 2), 'posix', 4), 'run');
    expect(runOf('preprovision')).toBe('bash infra/azd/preprovision.sh');
    expect(runOf('postprovision')).toBe('bash infra/azd/postprovision.sh');
    for (const script of ['infra/azd/preprovision.sh', 'infra/azd/postprovision.sh', 'infra/scripts/grant-app-identity.sh', 'infra/scripts/apply-schema.sh']) {
      expect(() => accessSync(join(ROOT, script), constants.X_OK), `${script} exists and is executable`).not.toThrow();
    }
    const post = readFileSync(join(INFRA, 'azd', 'postprovision.sh'), 'utf8');
    expect(post).toMatch(/^infra\/scripts\/grant-app-identity\.sh$/m);
    expect(post).toMatch(/^infra\/scripts\/apply-schema\.sh$/m);
    // the same scripts as infra/deploy.sh, so the two paths cannot drift
    const deploy = readFileSync(join(INFRA, 'deploy.sh'), 'utf8');
    expect(deploy).toMatch(/infra\/scripts\/grant-app-identity\.sh/);
    expect(deploy).toMatch(/infra\/scripts\/apply-schema\.sh/);
  });
});

describe('infra/azd (the azd entry point)', () => {
  it('passes infra/main.bicep only parameters it declares, and every required one', () => {
    const m = /^module\s+app\s+'\.\.\/main\.bicep'\s*=\s*\{/m.exec(wrapper);
    expect(m).not.toBeNull();
    const blanked = blankCommentsAndStrings(wrapper);
    const body = blanked.slice(m!.index, closingBracket(blanked, m!.index + m![0].length - 1));
    const p = /\n\s*params\s*:\s*\{/.exec(body)!;
    const passed = objectKeysAt(wrapper, blanked, m!.index + p.index + p[0].length - 1);
    const declared = params(main);
    expect(passed.filter((n) => !declared.has(n))).toEqual([]);
    expect([...declared].filter(([n, hasDefault]) => !hasDefault && !passed.includes(n))).toEqual([]);
  });

  it('re-exports every output of infra/main.bicep (azd stores them for the hooks and the service)', () => {
    expect(outputs(wrapper).sort()).toEqual(outputs(main).sort());
    for (const used of ['SQL_SERVER', 'SQL_DATABASE', 'APP_IDENTITY_NAME', 'APP_IDENTITY_CLIENT_ID']) {
      expect(readFileSync(join(INFRA, 'scripts', used.startsWith('APP') ? 'grant-app-identity.sh' : 'apply-schema.sh'), 'utf8')).toContain(used);
    }
  });

  it('fills every required parameter from the azd environment, and preprovision sets what has no default', () => {
    const file = JSON.parse(readFileSync(join(INFRA, 'azd', 'main.parameters.json'), 'utf8')) as { parameters: Record<string, { value: string }> };
    const declared = params(wrapper);
    expect(Object.keys(file.parameters).filter((n) => !declared.has(n))).toEqual([]);
    expect([...declared].filter(([n, hasDefault]) => !hasDefault && !(n in file.parameters))).toEqual([]);
    const pre = readFileSync(join(INFRA, 'azd', 'preprovision.sh'), 'utf8');
    const setByAzd = new Set(['AZURE_LOCATION']);
    for (const { value: v } of Object.values(file.parameters)) {
      const ref = /^\$\{(\w+)\}$/.exec(v); // no "=default"
      if (!ref || setByAzd.has(ref[1]!)) continue;
      expect(pre, `preprovision sets ${ref[1]}`).toMatch(new RegExp(`azd env set ${ref[1]} `));
    }
  });
});
