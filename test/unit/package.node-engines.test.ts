// The Node versions the app supports: Node 22 (what the Azure deployment runs; Node 20 reached its end of life in
// April 2026). package.json's `engines` says 22.13+, .ci/run runs the suite on an exact 22 from the npm registry, and
// no package in package-lock.json may exclude either (so `npm ci` on them prints no EBADENGINE line). The docs name
// the same version.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(__dirname, '../..');
const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string; engines?: { node?: string } }> };
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { engines: { node: string } };
const ciRun = readFileSync(path.join(root, '.ci/run'), 'utf8');
const docsDir = path.join(root, 'docs');
const docs = [path.join(root, 'README.md'), ...(existsSync(docsDir) ? readdirSync(docsDir).filter((f) => f.endsWith('.md')).map((f) => path.join(docsDir, f)) : [])]
  .map((f) => readFileSync(f, 'utf8'))
  .join('\n');
const CI_NODE = /^NODE_VERSION=(\d+\.\d+\.\d+)$/m.exec(ciRun)?.[1];

/** Whether a semver range (npm's `engines` grammar: `||` of space-joined comparators, `^`, `x` wildcards) admits the version. */
function admits(range: string, version: string): boolean {
  const v = version.split('.').map(Number);
  const cmp = (a: number[], b: number[]) => { for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) - (b[i] ?? 0); return 0; };
  const parse = (s: string) => s.replace(/^v/, '').split('.').map((p) => (p === 'x' || p === '*' ? 0 : Number(p)));
  return range.split('||').some((alt) =>
    alt.trim().replace(/(>=|<=|>|<|=|\^|~)\s+/g, '$1').split(/\s+/).filter(Boolean).every((c) => {
      const m = /^(>=|<=|>|<|\^|~|=)?(.+)$/.exec(c)!;
      const op = m[1] ?? '=';
      const b = parse(m[2]!);
      if (m[2] === '*' || m[2] === 'x') return true;
      const d = cmp(v, b);
      if (op === '>=') return d >= 0;
      if (op === '>') return d > 0;
      if (op === '<=') return d <= 0;
      if (op === '<') return d < 0;
      if (op === '^') return d >= 0 && v[0] === b[0];
      if (op === '~') return d >= 0 && v[0] === b[0] && v[1] === b[1];
      // a bare or `=` version with fewer parts is a wildcard on the rest (`20` = 20.x)
      const parts = m[2]!.split('.').length;
      return b.slice(0, parts).every((n, i) => v[i] === n);
    }),
  );
}

function excluding(version: string): string[] {
  return Object.entries(lock.packages)
    .filter(([key, p]) => key.startsWith('node_modules/') && p.engines?.node && !admits(p.engines.node, version))
    .map(([key, p]) => `${key.replace(/^.*node_modules\//, '')}@${p.version} (${p.engines!.node})`);
}

describe('the Node versions: engines, CI and the locked packages agree', () => {
  it('the range check reads npm ranges as npm does', () => {
    expect(admits('>=22.0.0', '20.19.0')).toBe(false);
    expect(admits('^20.19.0 || >=22.12.0', '20.19.0')).toBe(true);
    expect(admits('^20.19.0 || >=22.12.0', '22.0.0')).toBe(false);
    expect(admits('^18.19.0 || >=20.6.0', '20.19.0')).toBe(true);
    expect(admits('>=8', '20.19.0')).toBe(true);
  });

  it('package.json supports Node 22.13 and later, not Node 20', () => {
    expect(pkg.engines.node).toBe('>=22.13.0');
    expect(admits(pkg.engines.node, '20.19.0')).toBe(false);
  });

  it('.ci/run runs the suite on an exact Node 22 from the npm registry, one that engines admits', () => {
    expect(CI_NODE).toMatch(/^22\./);
    expect(admits(pkg.engines.node, CI_NODE!)).toBe(true);
    expect(ciRun).toContain('"node@$NODE_VERSION"');
    expect(ciRun).toMatch(/export PATH="\$node_home\/node_modules\/\.bin:\$PATH"[\s\S]*npm ci[\s\S]*npm test/);
    expect(ciRun).toContain('EBADENGINE'); // the run fails when npm ci prints one
  });

  it('no locked package excludes Node 22.13 or the CI version (npm ci prints no EBADENGINE)', () => {
    expect(excluding('22.13.0')).toEqual([]);
    expect(excluding(CI_NODE!)).toEqual([]);
  });

  it('the docs name Node 22.13 as the version to use', () => {
    expect(docs).toMatch(/Node(\.js)? 22\.13\+/);
  });
});
