// The Node versions the README names (Quick start) and docs/local-host.md explains ("Node versions") against the
// `engines.node` of every package in package-lock.json: none may exclude Node 22.13, and on Node 20 only the three
// telemetry packages docs/local-host.md lists may (applicationinsights 3.16.0 needs them; the versions that accept 20 probe the Azure metadata endpoint).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(__dirname, '../..');
const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string; engines?: { node?: string } }> };
const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
const nodeVersions = readFileSync(path.join(root, 'docs/local-host.md'), 'utf8');
const KNOWN_NODE_22_ONLY = ['@azure/core-process', '@azure/monitor-opentelemetry', '@azure/monitor-opentelemetry-exporter'];

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

describe('locked packages accept the Node versions the README names', () => {
  it('the range check reads npm ranges as npm does', () => {
    expect(admits('>=22.0.0', '20.19.0')).toBe(false);
    expect(admits('^20.19.0 || >=22.12.0', '20.19.0')).toBe(true);
    expect(admits('^20.19.0 || >=22.12.0', '22.0.0')).toBe(false);
    expect(admits('^18.19.0 || >=20.6.0', '20.19.0')).toBe(true);
    expect(admits('>=8', '20.19.0')).toBe(true);
  });

  it('the README names Node 22.13 and Node 20.19', () => {
    expect(readme).toMatch(/Node\.js 22\.13\+ \(what the Azure deployment runs\) or 20\.19\+/);
  });

  it('no locked package excludes Node 22.13', () => {
    expect(excluding('22.13.0')).toEqual([]);
  });

  it('on Node 20.19 only the telemetry packages docs/local-host.md lists are excluded', () => {
    const names = excluding('20.19.0').map((s) => s.replace(/@[^@]*$/, ''));
    expect([...new Set(names)].sort()).toEqual(KNOWN_NODE_22_ONLY);
    for (const name of KNOWN_NODE_22_ONLY) expect(nodeVersions).toContain(`\`${name}\``);
  });
});
