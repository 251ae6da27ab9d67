// azure.yaml: `azd up` provisions infra/ (through infra/azd/main.bicep, which deploys infra/main.bicep) and deploys
// the function app (host: function, Flex Consumption), running as hooks the steps that need the deployer's Entra
// identity (Node.js scripts in infra/azd/hooks/, tested with stand-in commands in infra.azd-hooks.test.ts). No azd
// runs here: azure.yaml is validated against azd's own schema (vendored, test/fixtures/azd/SOURCE.md) and the
// files are cross-checked.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2019 from 'ajv/dist/2019';
import addFormats from 'ajv-formats';
// yaml: present through applicationinsights (a production dependency), not a dependency of its own
import { parse as parseYaml } from 'yaml';
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

  it('runs every hook as the same node script from its posix and its windows block (review A2)', () => {
    const doc = parseYaml(yaml) as {
      hooks: Record<string, HookSpec>;
      services: { api: { hooks: Record<string, HookSpec> } };
    };
    const expected: Array<[string, HookSpec | undefined, string]> = [
      ['preup', doc.hooks.preup, 'preprovision'],
      ['preprovision', doc.hooks.preprovision, 'preprovision'],
      ['postprovision', doc.hooks.postprovision, 'postprovision'],
      ['api predeploy', doc.services.api.hooks.predeploy, 'predeploy'],
      ['api postdeploy', doc.services.api.hooks.postdeploy, 'postdeploy'],
    ];
    expect(Object.keys(doc.hooks).sort()).toEqual(['postprovision', 'preprovision', 'preup']);
    expect(Object.keys(doc.services.api.hooks).sort()).toEqual(['postdeploy', 'predeploy']);
    for (const [name, hook, script] of expected) {
      const run = `node infra/azd/hooks/${script}.mjs`;
      expect(hook?.posix, `${name}: posix`).toEqual({ shell: 'sh', run, continueOnError: false });
      // pwsh (azd falls back to Windows PowerShell 5 when PowerShell 7 is missing); node runs the same file
      expect(hook?.windows, `${name}: windows`).toEqual({ shell: 'pwsh', run, continueOnError: false });
      expect(existsSync(join(ROOT, 'infra', 'azd', 'hooks', `${script}.mjs`)), `${script}.mjs exists`).toBe(true);
    }
    // the grant runs the same SQL file as infra/deploy.sh (through infra/scripts/grant-app-identity.sh)
    expect(readFileSync(join(INFRA, 'azd', 'hooks', 'postprovision.mjs'), 'utf8')).toContain("'infra/sql/grant-app-identity.sql'");
    expect(readFileSync(join(INFRA, 'scripts', 'grant-app-identity.sh'), 'utf8')).toContain('-i infra/sql/grant-app-identity.sql');
  });

  it('is valid against azd\'s azure.yaml schema, which can also say no', () => {
    const validate = azdSchema();
    const doc = parseYaml(yaml) as Record<string, unknown>;
    expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
    // the schema's external refs are for azure.ai.* hosts only (registered empty), which this project has none of
    const hosts = Object.values(doc.services as Record<string, { host: string }>).map((s) => s.host);
    expect(hosts.filter((h) => h.startsWith('azure.ai.'))).toEqual([]);
    // negative controls: a shell azd does not know, a hook with no run, a misspelt key
    const broken = (edit: (d: any) => void) => {
      const d = structuredClone(doc) as any;
      edit(d);
      return validate(d);
    };
    expect(broken((d) => (d.hooks.preprovision.windows.shell = 'bash'))).toBe(false);
    expect(broken((d) => (d.services.api.hooks.predeploy.posix = { shell: 'sh', runn: 'x' }))).toBe(false);
    expect(broken((d) => (d.services.api.host = 'functions'))).toBe(false);
  });
});

interface HookSpec {
  posix?: Record<string, unknown>;
  windows?: Record<string, unknown>;
}

function azdSchema() {
  const schema = JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'azd', 'azure.yaml.json'), 'utf8')) as object;
  const ajv = new Ajv2019({ strict: false, allErrors: true });
  addFormats(ajv);
  const external = [...new Set([...JSON.stringify(schema).matchAll(/"\$ref":"(https:[^"]+)"/g)].map((m) => m[1]!))];
  expect(external.length).toBeGreaterThan(0);
  for (const id of external) {
    expect(id, 'only azd extension schemas are referenced').toMatch(/\/cli\/azd\/extensions\/azure\.ai\.[a-z]+\/schemas\//);
    ajv.addSchema({}, id);
  }
  return ajv.compile(schema);
}

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

  it('leaves azd nothing to prompt for with only AZURE_ENV_NAME, AZURE_LOCATION, AZURE_SUBSCRIPTION_ID (review A1)', () => {
    // azd (bicep_provider.go) substitutes ${VAR} / ${VAR=default} from the environment, drops a parameter whose
    // variable is unset and has no "=default", and then prompts (or, with --no-prompt, fails) for every
    // parameter that is neither passed nor defaulted in the Bicep. `azd up` does this BEFORE its preprovision
    // hook, so the parameters that hook computes must have Bicep defaults.
    const file = JSON.parse(readFileSync(join(INFRA, 'azd', 'main.parameters.json'), 'utf8')) as { parameters: Record<string, { value: string }> };
    const declared = params(wrapper);
    expect(Object.keys(file.parameters).filter((n) => !declared.has(n))).toEqual([]);
    const env = new Map([['AZURE_ENV_NAME', 'dev'], ['AZURE_LOCATION', 'swedencentral'], ['AZURE_SUBSCRIPTION_ID', 'sub']]);
    const passed = Object.entries(file.parameters)
      .filter(([, { value }]) => {
        const ref = /^\$\{(\w+)(=[^}]*)?\}$/.exec(value);
        return !ref || ref[2] !== undefined || env.has(ref[1]!);
      })
      .map(([n]) => n);
    const prompted = [...declared].filter(([n, hasDefault]) => !hasDefault && !passed.includes(n)).map(([n]) => n);
    expect(prompted).toEqual([]);
    for (const n of ['sqlAdminLogin', 'sqlAdminObjectId', 'sqlServerExists']) expect(declared.get(n), `${n} has a default`).toBe(true);
  });

  it('preprovision writes every variable the parameters file reads without a default', () => {
    const file = JSON.parse(readFileSync(join(INFRA, 'azd', 'main.parameters.json'), 'utf8')) as { parameters: Record<string, { value: string }> };
    const pre = readFileSync(join(INFRA, 'azd', 'hooks', 'preprovision.mjs'), 'utf8');
    const setByAzd = new Set(['AZURE_LOCATION']);
    const read = Object.values(file.parameters).flatMap(({ value }) => {
      const ref = /^\$\{(\w+)\}$/.exec(value);
      return ref && !setByAzd.has(ref[1]!) ? [ref[1]!] : [];
    });
    expect(read.sort()).toEqual(['SQL_ADMIN_LOGIN', 'SQL_ADMIN_OBJECT_ID', 'SQL_SERVER_EXISTS']);
    for (const v of read) expect(pre, `preprovision sets ${v}`).toMatch(new RegExp(`azdEnvSet\\(ctx, '${v}'`));
  });
});
