// No Bicep compiler can run here, so this file checks what a compiler would catch first in infra/: every module
// call passes parameters the module declares (and every parameter without a default), every
// `<module>.outputs.<name>` exists, every parent/scope symbol is a declared resource, API versions are
// well-formed, brackets balance, the parameters file only names declared parameters (and never a secret), and
// infra/deploy.sh reads only outputs main.bicep declares.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { blankCommentsAndStrings, closingBracket, INFRA, objectKeysAt } from '../support/bicep';

interface BicepFile {
  path: string;
  src: string;
  blanked: string;
  params: Map<string, { hasDefault: boolean; secure: boolean }>;
  outputs: Set<string>;
  resources: Set<string>;
  modules: Array<{ symbol: string; target: string; params: string[] }>;
}

function parse(path: string): BicepFile {
  const src = readFileSync(path, 'utf8');
  const blanked = blankCommentsAndStrings(src);
  const params = new Map<string, { hasDefault: boolean; secure: boolean }>();
  const lines = blanked.split('\n');
  lines.forEach((line, n) => {
    const m = /^param\s+(\w+)\s+[\w.[\]]+\s*(=)?/.exec(line);
    if (m) {
      // decorators sit on the lines right above
      let secure = false;
      for (let k = n - 1; k >= 0 && /^\s*@/.test(lines[k]!); k--) if (/^\s*@secure\(\)/.test(lines[k]!)) secure = true;
      params.set(m[1]!, { hasDefault: m[2] === '=', secure });
    }
  });
  const outputs = new Set([...blanked.matchAll(/^output\s+(\w+)\s/gm)].map((m) => m[1]!));
  const resources = new Set([...blanked.matchAll(/^\s*resource\s+(\w+)\s/gm)].map((m) => m[1]!));
  const modules: BicepFile['modules'] = [];
  for (const m of src.matchAll(/^module\s+(\w+)\s+'([^']+)'\s*=\s*(?:if\s*\([^\n]*\)\s*)?\{/gm)) {
    const open = m.index! + m[0].length - 1;
    const body = blanked.slice(open, closingBracket(blanked, open));
    const p = /\n\s*params\s*:\s*\{/.exec(body);
    modules.push({ symbol: m[1]!, target: join(dirname(path), m[2]!), params: p ? objectKeysAt(src, blanked, open + p.index + p[0].length - 1) : [] });
  }
  return { path, src, blanked, params, outputs, resources, modules };
}

const main = parse(join(INFRA, 'main.bicep'));
const all = [main, ...main.modules.map((m) => parse(m.target))];

describe('infra: Bicep wiring (what the compiler would check first)', () => {
  it('has the expected modules', () => {
    expect(main.modules.map((m) => m.symbol).sort()).toEqual(
      ['functionApp', 'identity', 'keyVault', 'monitoring', 'naming', 'observability', 'sql', 'storage'].sort(),
    );
  });

  it('passes every module only parameters it declares, and every required one', () => {
    for (const file of all) {
      for (const mod of file.modules) {
        const target = parse(mod.target);
        const declared = [...target.params.keys()];
        expect(mod.params.filter((p) => !target.params.has(p)), `${mod.symbol}: unknown params`).toEqual([]);
        const required = declared.filter((p) => !target.params.get(p)!.hasDefault);
        expect(required.filter((p) => !mod.params.includes(p)), `${mod.symbol}: required params not passed`).toEqual([]);
      }
    }
  });

  it('reads only outputs the modules declare', () => {
    for (const file of all) {
      for (const mod of file.modules) {
        const target = parse(mod.target);
        const used = [...file.blanked.matchAll(new RegExp(`\\b${mod.symbol}\\.outputs\\.(\\w+)`, 'g'))].map((m) => m[1]!);
        expect(used.filter((o) => !target.outputs.has(o)), `${mod.symbol}: unknown outputs`).toEqual([]);
      }
    }
  });

  it('refers to declared resources in parent: and scope:', () => {
    let checked = 0;
    for (const file of all) {
      for (const m of file.blanked.matchAll(/^\s*(parent|scope)\s*:\s*(\w+)\s*$/gm)) {
        expect(file.resources.has(m[2]!), `${m[1]}: ${m[2]} in ${file.path}`).toBe(true);
        checked++;
      }
    }
    expect(checked, 'parent:/scope: references found (a pattern that matches nothing checks nothing)').toBeGreaterThan(5);
  });

  it('uses dated API versions and balanced brackets', () => {
    let resources = 0;
    for (const file of all) {
      for (const m of file.src.matchAll(/^\s*resource\s+\w+\s+'([^']+)'/gm)) {
        expect(m[1], file.path).toMatch(/^[A-Za-z]+\.[A-Za-z]+\/[A-Za-z/]+@\d{4}-\d{2}-\d{2}(-preview)?$/);
        resources++;
      }
      const count = (c: string) => file.blanked.split(c).length - 1;
      expect([count('{'), count('['), count('(')], `brackets in ${file.path}`).toEqual([count('}'), count(']'), count(')')]);
    }
    expect(resources, 'resource declarations found').toBeGreaterThan(10);
  });

  it('declares no parameter twice and references only declared parameters in the parameters file', () => {
    const file = JSON.parse(readFileSync(join(INFRA, 'main.parameters.json'), 'utf8')) as { parameters: Record<string, unknown> };
    const names = Object.keys(file.parameters);
    expect(names.filter((n) => !main.params.has(n)), 'unknown parameters in main.parameters.json').toEqual([]);
    expect(names.filter((n) => main.params.get(n)!.secure), 'secure parameters must not be in a committed file').toEqual([]);
    for (const f of all) {
      const declared = [...f.blanked.matchAll(/^param\s+(\w+)/gm)].map((m) => m[1]!);
      expect(new Set(declared).size, `duplicate params in ${f.path}`).toBe(declared.length);
    }
  });

  it('keeps the callback signing secret a secure parameter end to end', () => {
    expect(main.params.get('callbackSigningSecret')?.secure).toBe(true);
    const kv = all.find((f) => f.path.endsWith('keyvault.bicep'))!;
    expect(kv.params.get('callbackSigningSecret')?.secure).toBe(true);
  });

  it('lets infra/deploy.sh read only outputs main.bicep declares', () => {
    const script = readFileSync(join(INFRA, 'deploy.sh'), 'utf8');
    const read = [...script.matchAll(/\$\(out (\w+)\)/g)].map((m) => m[1]!);
    expect(read.length).toBeGreaterThan(3);
    expect(read.filter((o) => !main.outputs.has(o)), 'outputs deploy.sh reads that main.bicep does not declare').toEqual([]);
  });
});
