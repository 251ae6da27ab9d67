// Requires a module while some of the packages it requires at load time are deferred: while `load` runs, a
// `require(request)` for which `deferred(request)` is true returns a stand-in that requires the real module on
// first use (any property read, `in`, key listing) and forwards to it from then on. Code that never touches such
// a module never loads it. Once `load` returns, `require` behaves normally again; stand-ins already handed out
// stay lazy.
//
// Why: the Azure Monitor distro (applicationinsights 3.x → @azure/monitor-opentelemetry → @opentelemetry/sdk-node)
// requires every OTLP/Prometheus/Zipkin exporter, the B3/Jaeger propagators, the YAML configuration loader and
// @azure/identity when it loads, although with our options it constructs none of them; loading them is most of
// the SDK's start-up time and memory (see setup.ts).

import Module from 'node:module';

type Load = (request: string, parent: unknown, isMain: boolean) => unknown;
const loader = Module as unknown as { _load: Load };

/** What a requireDeferring call deferred (for tests and measurements). */
export interface LazyRequireReport {
  /** each stand-in handed out: the request and the file that required it */
  deferred: Array<{ request: string; from: string | undefined }>;
  /** requests whose real module has been loaded since (something used the stand-in) */
  loaded: string[];
}

/**
 * Only for packages whose exports are an object (a namespace of classes and functions), not a function: a
 * stand-in can be read from but not called. test/unit/telemetry.lazy-require.test.ts checks the packages setup.ts
 * defers.
 */
export function requireDeferring<T>(load: () => T, deferred: (request: string) => boolean, report?: LazyRequireReport): T {
  const original = loader._load;
  let active = true;
  const deferring = function (this: unknown, request: string, parent: unknown, isMain: boolean) {
    if (!active || !deferred(request)) return original.call(this, request, parent, isMain);
    report?.deferred.push({ request, from: (parent as { filename?: string } | undefined)?.filename });
    return standIn(() => {
      report?.loaded.push(request);
      return original.call(Module, request, parent, false) as object;
    });
  } as Load;
  loader._load = deferring;
  try {
    return load();
  } finally {
    active = false;
    // if something wrapped the loader meanwhile, ours stays in its chain, inactive
    if (loader._load === deferring) loader._load = original;
  }
}

function standIn(requireReal: () => object): object {
  let real: object | undefined;
  const target = () => (real ??= requireReal());
  return new Proxy(Object.create(null) as object, {
    get: (_, key) => Reflect.get(target(), key),
    has: (_, key) => Reflect.has(target(), key),
    ownKeys: () => Reflect.ownKeys(target()),
    getOwnPropertyDescriptor: (_, key) => {
      const descriptor = Reflect.getOwnPropertyDescriptor(target(), key);
      // a proxy may not report a property as non-configurable unless its own target has it that way
      return descriptor && { ...descriptor, configurable: true };
    },
    getPrototypeOf: () => Reflect.getPrototypeOf(target()),
    set: () => false,
    defineProperty: () => false,
    deleteProperty: () => false,
  });
}
