// The import graph of the app's own code (shared/, functions/, local/, handlers/): no circles anywhere, and the
// engine's layers (channel, transport, stores, engine, sql) reach nothing above them — not the settings readers
// (shared/settings), not the composition root (shared/runtime.ts), not the HTTP layer (shared/http) — neither
// directly nor through another module. Every import counts: `import type`, re-exports and lazy `import()` too.

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(__dirname, '../..');
const FOLDERS = ['shared', 'functions', 'local', 'handlers'];
const ENGINE_LAYERS = ['shared/channel/', 'shared/transport/', 'shared/stores/', 'shared/engine/', 'shared/sql/', 'shared/flows/', 'shared/schedules/', 'shared/tracing/'];
const ABOVE_THE_ENGINE = ['shared/settings/', 'shared/config.ts', 'shared/runtime.ts', 'shared/http/'];

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (/\.tsx?$/.test(name) && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

function resolveImport(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined; // a package
  const base = resolve(dirname(from), specifier);
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

type Graph = Map<string, string[]>;

function importGraph(): Graph {
  const graph: Graph = new Map();
  for (const file of FOLDERS.flatMap((f) => sourceFiles(join(ROOT, f)))) {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = info.importedFiles.map((i) => resolveImport(file, i.fileName)).filter((t): t is string => t !== undefined);
    graph.set(rel(file), [...new Set(targets.map(rel))].filter((t) => FOLDERS.some((f) => t.startsWith(`${f}/`))));
  }
  return graph;
}

const rel = (path: string) => relative(ROOT, path).split('\\').join('/');

/** One circle per strongly connected component (Tarjan), each as the chain a → b → … → a. */
function importCycles(graph: Graph): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (v: string) => {
    indices.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!indices.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, indices.get(w)!));
    }
    if (low.get(v) === indices.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) components.push(component);
    }
  };
  for (const v of [...graph.keys()].sort()) if (!indices.has(v)) visit(v);
  return components.map((c) => {
    const start = [...c].sort()[0]!;
    return [...shortestPath(graph, start, (n) => n === start, new Set(c))!, start];
  });
}

/** The shortest chain from `from` (excluded from the targets) to a node `isTarget` accepts, through `within`. */
function shortestPath(graph: Graph, from: string, isTarget: (n: string) => boolean, within?: Set<string>): string[] | undefined {
  const previous = new Map<string, string>();
  const queue = [from];
  const seen = new Set([from]);
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (within && !within.has(w)) continue;
      if (isTarget(w)) {
        const chain = [v];
        for (let p = previous.get(v); p !== undefined; p = previous.get(p)) chain.unshift(p);
        return within ? chain : [...chain, w];
      }
      if (seen.has(w)) continue;
      seen.add(w);
      previous.set(w, v);
      queue.push(w);
    }
  }
  return undefined;
}

/** Per engine-layer file, the shortest chain by which it reaches a module above the engine (none: []). */
function layerViolations(graph: Graph): string[][] {
  const above = (n: string) => ABOVE_THE_ENGINE.some((a) => (a.endsWith('/') ? n.startsWith(a) : n === a));
  const chains: string[][] = [];
  for (const file of [...graph.keys()].sort()) {
    if (!ENGINE_LAYERS.some((l) => file.startsWith(l))) continue;
    const chain = shortestPath(graph, file, above);
    if (chain) chains.push(chain);
  }
  return chains;
}

describe('the import graph of shared/, functions/, local/ and handlers/', () => {
  const graph = importGraph();

  it('reads the files it checks (a broken walk would pass every rule)', () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get('shared/runtime.ts')).toContain('shared/engine/create-engine.ts');
  });

  it('has no import circle', () => {
    const cycles = importCycles(graph).map((c) => c.join(' → '));
    expect(cycles, `import circles:\n${cycles.join('\n')}`).toEqual([]);
  });

  it('the engine layers reach nothing above them (settings, runtime, http)', () => {
    const chains = layerViolations(graph).map((c) => c.join(' → '));
    expect(chains, `engine layers importing above them:\n${chains.join('\n')}`).toEqual([]);
  });

  it('the checks find what they look for (a circle and a climb built by hand)', () => {
    const sample: Graph = new Map([
      ['shared/engine/a.ts', ['shared/sql/b.ts']],
      ['shared/sql/b.ts', ['shared/log.ts']],
      ['shared/log.ts', ['shared/engine/a.ts', 'shared/settings/index.ts']],
      ['shared/settings/index.ts', []],
    ]);
    expect(importCycles(sample)).toEqual([['shared/engine/a.ts', 'shared/sql/b.ts', 'shared/log.ts', 'shared/engine/a.ts']]);
    expect(layerViolations(sample)).toEqual([
      ['shared/engine/a.ts', 'shared/sql/b.ts', 'shared/log.ts', 'shared/settings/index.ts'],
      ['shared/sql/b.ts', 'shared/log.ts', 'shared/settings/index.ts'],
    ]);
  });
});
