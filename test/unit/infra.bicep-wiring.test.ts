// No Bicep compiler can run here, so this file checks what a compiler would catch first in infra/: every module
// call passes parameters the module declares (and every parameter without a default), every
// `<module>.outputs.<name>` exists, every parent/scope symbol is a declared resource, API versions are
// well-formed, brackets balance, the parameters file only names declared parameters (and never a secret), and
// infra/deploy.sh reads only outputs main.bicep declares.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';

const INFRA = join(__dirname, '..', '..', 'infra');

/** Comments and string contents blanked to spaces (same length), so brackets inside them are not counted. */
function blank(src: string): string {
  const out = src.split('');
  const fill = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  let i = 0;
  while (i < src.length) {
    if (src.startsWith('//', i)) {
      const end = src.indexOf('\n', i);
      const stop = end < 0 ? src.length : end;
      fill(i, stop);
      i = stop;
    } else if (src.startsWith('/*', i)) {
      const end = src.indexOf('*/', i + 2);
      const stop = end < 0 ? src.length : end + 2;
      fill(i, stop);
      i = stop;
    } else if (src.startsWith("'''", i)) {
      const end = src.indexOf("'''", i + 3);
      const stop = end < 0 ? src.length : end + 3;
      fill(i + 3, stop - 3);
      i = stop;
    } else if (src[i] === "'") {
      let j = i + 1;
      while (j < src.length && src[j] !== "'") j += src[j] === '\\' ? 2 : 1;
      fill(i + 1, j);
      i = j + 1;
    } else i++;
  }
  return out.join('');
}

/** Index of the bracket closing the one at `open` (on blanked text). */
function closing(blanked: string, open: number): number {
  let depth = 0;
  for (let k = open; k < blanked.length; k++) {
    const c = blanked[k];
    if (c === '{' || c === '[' || c === '(') depth++;
    else if (c === '}' || c === ']' || c === ')') {
      depth--;
      if (depth === 0) return k;
    }
  }
  throw new Error(`no closing bracket for offset ${open}`);
}

/** Own keys (one per line) of the object whose `{` is at `open`. */
function objectKeys(blanked: string, open: number): string[] {
  const end = closing(blanked, open);
  const keys: string[] = [];
  let depth = 0;
  let depthAtLineStart = 0;
  let lineStart = open + 1;
  for (let k = open + 1; k <= end; k++) {
    const c = blanked[k];
    if (c === '\n' || k === end) {
      if (depthAtLineStart === 0) {
        const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:/.exec(blanked.slice(lineStart, k));
        if (m) keys.push(m[1]!);
      }
      lineStart = k + 1;
      depthAtLineStart = depth;
      continue;
    }
    if (c === '{' || c === '[' || c === '(') depth++;
    else if (c === '}' || c === ']' || c === ')') depth--;
  }
  return keys;
}

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
  const blanked = blank(src);
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
    const body = blanked.slice(open, closing(blanked, open));
    const p = /\n\s*params\s*:\s*\{/.exec(body);
    modules.push({ symbol: m[1]!, target: join(dirname(path), m[2]!), params: p ? objectKeys(blanked, open + p.index + p[0].length - 1) : [] });
  }
  return { path, src, blanked, params, outputs, resources, modules };
}

const main = parse(join(INFRA, 'main.bicep'));
const all = [main, ...main.modules.map((m) => parse(m.target))];

describe('infra: Bicep wiring (what the compiler would check first)', () => {
  it('has the expected modules', () => {
    expect(main.modules.map((m) => m.symbol).sort()).toEqual(
      ['functionApp', 'identity', 'keyVault', 'monitoring', 'observability', 'sql', 'storage'].sort(),
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
    for (const file of all) {
      for (const m of file.blanked.matchAll(/^\s*(parent|scope)\s*:\s*(\w+)\s*$/gm)) {
        expect(file.resources.has(m[2]!), `${m[1]}: ${m[2]} in ${file.path}`).toBe(true);
      }
    }
  });

  it('uses dated API versions and balanced brackets', () => {
    for (const file of all) {
      for (const m of file.src.matchAll(/^\s*resource\s+\w+\s+'([^']+)'/gm)) {
        expect(m[1], file.path).toMatch(/^[A-Za-z]+\.[A-Za-z]+\/[A-Za-z/]+@\d{4}-\d{2}-\d{2}(-preview)?$/);
      }
      const count = (c: string) => file.blanked.split(c).length - 1;
      expect([count('{'), count('['), count('(')], `brackets in ${file.path}`).toEqual([count('}'), count(']'), count(')')]);
    }
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
