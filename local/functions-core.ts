// Our stand-in for `@azure/functions-core`, the module the Azure Functions Node worker injects. The
// @azure/functions library calls it from app.http / app.timer / app.hook.*; outside the worker the
// library finds nothing and switches to "test mode", registering nothing. Installing this module before
// the library first looks it up makes loading the real functions entry fill a FunctionTable instead.
//
// The library caches its lookup (hit or miss) on the first registration call, for the life of the
// process. So all state lives on globalThis: under vitest every test file evaluates its own copy of
// this module, but the library (a node_modules package, loaded once by Node) keeps talking to the core
// object installed first.
import Module from 'node:module';
import * as path from 'node:path';

export const CORE_MODULE = '@azure/functions-core';

export type AuthLevel = 'anonymous' | 'function' | 'admin';
export type FunctionCallback = (...args: unknown[]) => unknown;
export type HookCallback = (context: Record<string, unknown>) => unknown;
export type CoreLogLevel = 'trace' | 'debug' | 'information' | 'warning' | 'error' | 'critical' | 'none';
export type CoreLogSink = (level: CoreLogLevel, category: string, message: string) => void;

export interface BindingInfo {
  type?: string | null;
  direction?: string | null;
  [key: string]: unknown;
}

export interface FunctionMetadata {
  name: string;
  functionId?: string;
  bindings: Record<string, BindingInfo>;
  retryOptions?: unknown;
}

interface FunctionBase {
  name: string;
  handler: FunctionCallback;
  metadata: FunctionMetadata;
  trigger: BindingInfo;
}
export interface HttpFunction extends FunctionBase {
  kind: 'http';
  /** Route template without the "api/" prefix; the host's default is the function name. */
  route: string;
  /** Upper-case methods. */
  methods: string[];
  authLevel: AuthLevel;
}
export interface TimerFunction extends FunctionBase {
  kind: 'timer';
  schedule: string;
  runOnStartup: boolean;
  useMonitor: boolean;
}
export interface QueueFunction extends FunctionBase {
  kind: 'queue';
  /** May hold %AppSetting% expressions, resolved when the host starts. */
  queueName: string;
  /** The app setting (prefix) of the storage account; the host's default is AzureWebJobsStorage. */
  connection: string;
}
export interface OtherFunction extends FunctionBase {
  kind: 'other';
  triggerType: string;
}
export type RegisteredFunction = HttpFunction | TimerFunction | QueueFunction | OtherFunction;

export interface RegisteredHook {
  name: string;
  callback: HookCallback;
  disposed: boolean;
}

export interface ProgrammingModelInfo {
  name: string;
  version: string;
}

export interface FunctionTable {
  functions: RegisteredFunction[];
  http: HttpFunction[];
  timers: TimerFunction[];
  /** Storage-queue triggers (local/queue-trigger.ts). */
  queues: QueueFunction[];
  /** Triggers the local host does not run (blobs, Service Bus…); listed so they are not silently lost. */
  other: OtherFunction[];
  hooks: RegisteredHook[];
  /** Set by @azure/functions on its first registration: proof it did not fall back to test mode. */
  programmingModel: ProgrammingModelInfo | undefined;
}

// The Functions host answers every method when an httpTrigger lists none, and uses 'function' auth when
// authLevel is absent. @azure/functions itself fills in ['GET', 'POST'] and 'anonymous' (trigger.ts).
export const ALL_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'TRACE'];
const HOST_DEFAULT_AUTH: AuthLevel = 'function';

class Disposable {
  static from(...items: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => items.forEach((d) => d.dispose()));
  }
  #onDispose: (() => unknown) | undefined;
  constructor(onDispose: () => unknown) {
    this.#onDispose = onDispose;
  }
  dispose(): void {
    const f = this.#onDispose;
    this.#onDispose = undefined;
    f?.();
  }
}

interface CoreState {
  installed: boolean;
  functions: (RegisteredFunction & { disposed?: boolean })[];
  hooks: RegisteredHook[];
  programmingModel: (ProgrammingModelInfo & Record<string, unknown>) | undefined;
  logSink: CoreLogSink;
  tables: Map<string, FunctionTable>;
  loading: Promise<unknown>;
  core: object;
}

const STATE_KEY = Symbol.for('asyncresponse-functions.local.functions-core');

function state(): CoreState {
  const g = globalThis as unknown as Record<symbol, CoreState | undefined>;
  let s = g[STATE_KEY];
  if (!s) {
    s = {
      installed: false,
      functions: [],
      hooks: [],
      programmingModel: undefined,
      logSink: defaultLogSink,
      tables: new Map(),
      loading: Promise.resolve(),
      core: createCore(),
    };
    g[STATE_KEY] = s;
  }
  return s;
}

function defaultLogSink(level: CoreLogLevel, category: string, message: string): void {
  if (level === 'warning' || level === 'error' || level === 'critical') {
    console.warn(`[${new Date().toISOString()}] [${category}] ${message}`);
  }
}

/** Where the library's system logs (workerSystemLog) go; the local host points this at its logger. */
export function setCoreLogSink(sink: CoreLogSink | undefined): void {
  state().logSink = sink ?? defaultLogSink;
}

export function getCoreLogSink(): CoreLogSink {
  return state().logSink;
}

function createCore(): object {
  return {
    version: '4.0.0-local',
    hostVersion: '4.0.0-local',
    Disposable,
    registerFunction(metadata: FunctionMetadata, callback: FunctionCallback): Disposable {
      const entry: RegisteredFunction & { disposed?: boolean } = describeFunction(metadata, callback);
      state().functions.push(entry);
      return new Disposable(() => (entry.disposed = true));
    },
    registerHook(name: string, callback: HookCallback): Disposable {
      const hook: RegisteredHook = { name, callback, disposed: false };
      state().hooks.push(hook);
      return new Disposable(() => (hook.disposed = true));
    },
    setProgrammingModel(model: ProgrammingModelInfo & Record<string, unknown>): void {
      state().programmingModel = model;
    },
    getProgrammingModel(): unknown {
      return state().programmingModel;
    },
    log(level: CoreLogLevel, category: string, message: string): void {
      state().logSink(level, category, message);
    },
  };
}

function describeFunction(metadata: FunctionMetadata, handler: FunctionCallback): RegisteredFunction {
  const name = metadata.name;
  const trigger = Object.values(metadata.bindings ?? {}).find(
    (b) => b.direction === 'in' && typeof b.type === 'string' && b.type.toLowerCase().endsWith('trigger'),
  );
  if (!trigger) throw new Error(`Function "${name}" has no trigger binding.`);
  const type = String(trigger.type);
  const base = { name, handler, metadata, trigger };
  if (type.toLowerCase() === 'httptrigger') {
    const methods = Array.isArray(trigger.methods) && trigger.methods.length > 0
      ? trigger.methods.map((m) => String(m).toUpperCase())
      : ALL_METHODS;
    const route = typeof trigger.route === 'string' && trigger.route.trim() !== '' ? trigger.route : name;
    const authLevel = typeof trigger.authLevel === 'string'
      ? (trigger.authLevel.toLowerCase() as AuthLevel)
      : HOST_DEFAULT_AUTH;
    return { ...base, kind: 'http', route: route.replace(/^\/+|\/+$/g, ''), methods, authLevel };
  }
  if (type.toLowerCase() === 'timertrigger') {
    if (typeof trigger.schedule !== 'string') throw new Error(`Timer function "${name}" has no schedule.`);
    return {
      ...base,
      kind: 'timer',
      schedule: trigger.schedule,
      runOnStartup: trigger.runOnStartup === true,
      useMonitor: trigger.useMonitor !== false,
    };
  }
  if (type.toLowerCase() === 'queuetrigger') {
    if (typeof trigger.queueName !== 'string' || trigger.queueName === '') throw new Error(`Queue function "${name}" has no queueName.`);
    const connection = typeof trigger.connection === 'string' && trigger.connection !== '' ? trigger.connection : 'AzureWebJobsStorage';
    return { ...base, kind: 'queue', queueName: trigger.queueName, connection };
  }
  return { ...base, kind: 'other', triggerType: type };
}

/** Makes `require('@azure/functions-core')` return our core. Idempotent, process-wide. */
export function installFunctionsCore(): void {
  const s = state();
  if (s.installed) return;
  const loader = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
  const original = loader._load;
  loader._load = function (this: unknown, request: string, ...rest: unknown[]): unknown {
    if (request === CORE_MODULE) return state().core;
    return original.call(this, request, ...rest);
  };
  s.installed = true;
}

/**
 * Installs the core, loads the functions entry and returns what it registered.
 *
 * `entry` is a module path (absolute, or relative to the cwd) or a function that imports the entry.
 * A path is loaded with `import()`: compiled to CommonJS by tsc that is a plain `require` (dist .js),
 * while under vitest it goes through vitest's transform, so a .ts entry loads too. Tests can also pass
 * `() => import('../fixtures/app')`.
 */
export function loadFunctionApp(entry: string | (() => unknown)): Promise<FunctionTable> {
  installFunctionsCore();
  const s = state();
  // Loads run one at a time so each table holds only what its own entry registered.
  const result = s.loading.then(() => loadOnce(s, entry));
  s.loading = result.catch(() => undefined);
  return result;
}

async function loadOnce(s: CoreState, entry: string | (() => unknown)): Promise<FunctionTable> {
  // "functions/index" and "functions/index.ts" name the same module.
  const key = typeof entry === 'string' ? path.resolve(entry).replace(/\.[cm]?[jt]s$/, '') : undefined;
  const fnStart = s.functions.length;
  const hookStart = s.hooks.length;
  if (typeof entry === 'string') await import(path.resolve(entry));
  else await entry();

  const functions = s.functions.slice(fnStart).filter((f) => !f.disposed);
  const hooks = s.hooks.slice(hookStart);
  if (functions.length === 0 && hooks.length === 0) {
    const cached = key !== undefined ? s.tables.get(key) : undefined;
    if (cached) return cached; // the module was already evaluated in this module graph
    throw new Error(
      `Loading ${key ?? 'the functions entry'} registered nothing. Either it calls no app.http/app.timer, or it ` +
        `was already imported in this process (load it once), or @azure/functions looked for ${CORE_MODULE} ` +
        `before installFunctionsCore() ran and stays in test mode.`,
    );
  }
  const seen = new Set<string>();
  for (const f of functions) {
    if (seen.has(f.name.toLowerCase())) throw new Error(`Function "${f.name}" is registered twice.`);
    seen.add(f.name.toLowerCase());
  }
  const model = s.programmingModel;
  const table: FunctionTable = {
    functions,
    http: functions.filter((f): f is HttpFunction => f.kind === 'http'),
    timers: functions.filter((f): f is TimerFunction => f.kind === 'timer'),
    queues: functions.filter((f): f is QueueFunction => f.kind === 'queue'),
    other: functions.filter((f): f is OtherFunction => f.kind === 'other'),
    hooks,
    programmingModel: model ? { name: model.name, version: model.version } : undefined,
  };
  if (key !== undefined) s.tables.set(key, table);
  return table;
}
