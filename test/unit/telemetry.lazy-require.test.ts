// requireDeferring (shared/telemetry/lazy-require.ts): stand-ins that load the real module on first use, and the
// packages setup.ts defers while the Application Insights SDK loads.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { requireDeferring, type LazyRequireReport } from '../../shared/telemetry/lazy-require';
import { isUnusedSdkPackage, managedIdentityCredential } from '../../shared/telemetry/setup';

const nodeRequire = createRequire(__filename);
const loaderOf = () => (Module as unknown as { _load: unknown })._load;

const dir = mkdtempSync(path.join(tmpdir(), 'lazy-require-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A module that counts its evaluations, and a parent module that requires it. */
function fixture(name: string): { parent: string; counter: () => number } {
  const key = `__lazyRequireLoads_${name}`;
  writeFileSync(path.join(dir, `${name}-dep.js`), `globalThis.${key} = (globalThis.${key} || 0) + 1;\nexports.value = 42;\nexports.twice = (n) => n * 2;\nclass Thing { constructor() { this.made = true; } }\nexports.Thing = Thing;\n`);
  writeFileSync(path.join(dir, `${name}-parent.js`), `exports.dep = require('./${name}-dep');\nexports.plain = require('node:path');\n`);
  return { parent: path.join(dir, `${name}-parent.js`), counter: () => ((globalThis as Record<string, unknown>)[key] as number | undefined) ?? 0 };
}

describe('managedIdentityCredential', () => {
  it('is a TokenCredential that does not load @azure/identity until a token is requested', () => {
    const isIdentity = (f: string) => f.includes(`${path.sep}@azure${path.sep}identity${path.sep}`);
    // runs first: the tests below load @azure/identity
    expect(Object.keys(nodeRequire.cache).filter(isIdentity)).toEqual([]);
    const credential = managedIdentityCredential('00000000-0000-0000-0000-000000000001');
    expect(credential.getToken).toBeTypeOf('function');
    expect(Object.keys(nodeRequire.cache).filter(isIdentity)).toEqual([]);
  });
});

describe('requireDeferring', () => {
  it('hands out a stand-in that loads the real module on first use, once, and forwards to it', () => {
    const { parent, counter } = fixture('basic');
    const report: LazyRequireReport = { deferred: [], loaded: [] };
    const loaded = requireDeferring(() => nodeRequire(parent) as { dep: Record<string, unknown>; plain: typeof path }, (r) => r.endsWith('-dep'), report);
    expect(counter(), 'not evaluated while its parent loads').toBe(0);
    expect(report.deferred).toEqual([{ request: './basic-dep', from: parent }]);
    expect(loaded.plain).toBe(path); // requests not deferred are the real modules
    expect(loaded.dep.value).toBe(42);
    expect(counter()).toBe(1);
    expect((loaded.dep.twice as (n: number) => number)(4)).toBe(8);
    const Thing = loaded.dep.Thing as new () => { made: boolean };
    expect(new Thing()).toBeInstanceOf(Thing);
    expect('value' in loaded.dep).toBe(true);
    expect(Object.keys(loaded.dep).sort()).toEqual(['Thing', 'twice', 'value']);
    expect(counter(), 'evaluated once').toBe(1);
    expect(report.loaded).toEqual(['./basic-dep']);
  });

  it('listing the keys of a stand-in loads the module too (what tslib __exportStar does)', () => {
    const { parent, counter } = fixture('keys');
    const loaded = requireDeferring(() => nodeRequire(parent) as { dep: object }, (r) => r.endsWith('-dep'));
    expect(counter()).toBe(0);
    expect({ ...loaded.dep }).toMatchObject({ value: 42 });
    expect(counter()).toBe(1);
  });

  it('restores the module loader afterwards, also when the load throws; later requires are real', () => {
    const before = loaderOf();
    expect(() =>
      requireDeferring(() => {
        throw new Error('boom');
      }, () => true),
    ).toThrow('boom');
    expect(loaderOf()).toBe(before);
    const { parent, counter } = fixture('after');
    requireDeferring(() => undefined, () => true);
    nodeRequire(parent);
    expect(counter(), 'required normally outside the window').toBe(1);
  });
});

describe('requireDeferring when another loader hook is installed during the load', () => {
  it('keeps that hook, and defers nothing once the load is over', () => {
    const loader = Module as unknown as { _load: (...args: unknown[]) => unknown };
    const before = loader._load;
    let theirs: ((...args: unknown[]) => unknown) | undefined;
    try {
      requireDeferring(() => {
        const ours = loader._load;
        theirs = function (this: unknown, ...args: unknown[]) {
          return ours.apply(this, args);
        };
        loader._load = theirs;
      }, (r) => r.endsWith('-dep'));
      expect(loader._load).toBe(theirs);
      const { parent, counter } = fixture('wrapped');
      nodeRequire(parent);
      expect(counter(), 'required for real through the inactive hook').toBe(1);
    } finally {
      loader._load = before;
    }
  });
});

describe('the packages setup.ts defers while applicationinsights loads', () => {
  const report: LazyRequireReport = { deferred: [], loaded: [] };
  const before = new Set(Object.keys(nodeRequire.cache));
  requireDeferring(() => nodeRequire('applicationinsights'), isUnusedSdkPackage, report);

  it('include the OTLP / Prometheus / Zipkin exporters, sdk-node configuration and @azure/identity, none used while loading', () => {
    const requests = new Set(report.deferred.map((d) => d.request));
    for (const expected of [
      '@opentelemetry/exporter-trace-otlp-grpc',
      '@opentelemetry/exporter-logs-otlp-proto',
      '@opentelemetry/exporter-metrics-otlp-grpc',
      '@opentelemetry/exporter-prometheus',
      '@opentelemetry/exporter-zipkin',
      '@opentelemetry/configuration',
      '@opentelemetry/propagator-b3',
      '@opentelemetry/instrumentation-mongodb',
      '@azure/identity',
    ]) {
      expect(requests, expected).toContain(expected);
    }
    expect(report.loaded).toEqual([]);
    const loadedNow = Object.keys(nodeRequire.cache).filter((f) => !before.has(f));
    expect(loadedNow.some((f) => f.includes(`${path.sep}applicationinsights${path.sep}`))).toBe(true);
    expect(loadedNow.filter((f) => /node_modules\/@opentelemetry\/(exporter-|configuration\/|propagator-)/.test(f))).toEqual([]);
  });

  it('are all objects (a stand-in cannot be called), and each loads', () => {
    const seen = new Set<string>();
    for (const { request, from } of report.deferred) {
      const resolved = createRequire(from!).resolve(request);
      if (seen.has(resolved)) continue;
      seen.add(resolved);
      const real: unknown = createRequire(from!)(request);
      expect(typeof real, `${request} from ${from}`).toBe('object');
    }
    expect(seen.size).toBeGreaterThan(10);
  });
});
