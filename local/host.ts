// The local Functions host: serves the captured HTTP functions under /api with node:http, fires the
// timer functions on their schedules, and runs the app hooks around start and shutdown.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { keyMatches } from './function-key';
import { getCoreLogSink, setCoreLogSink, type FunctionTable, type HttpFunction, type TimerFunction } from './functions-core';
import { readBody, sendProblem, toHttpRequest, writeHandlerResult } from './http-adapter';
import { activeHooks, invokeFunction, type InvocationRecord, type InvokeEnv } from './invoke';
import { startQueueTrigger, HOST_QUEUE_DEFAULTS, type QueueTriggerSettings, type RunningQueueTrigger } from './queue-trigger';
import { queueServiceClient } from '../shared/drain-requests/storage-queue';
import { storageUnreachable } from '../shared/drain-requests/unreachable';
import { consoleLogger, logLine, type HostLogger } from './log';
import { nextOccurrence, parseSchedule, type Schedule } from '../shared/ncrontab';
import { requestUrl } from './request-url';
import { RouteTable } from './routes';
import { startTimer, type RunningTimer } from './timers';
import { registerClientGone } from '../shared/http/client-gone';

export interface LocalHostOptions {
  table: FunctionTable;
  /** 0 picks a free port. Default 7071. */
  port?: number;
  host?: string;
  /** host.json extensions.http.routePrefix; default "api". */
  prefix?: string;
  /** When set, functions with authLevel function/admin need it in x-functions-key or ?code=. */
  functionKey?: string;
  logger?: HostLogger;
  /** Fire timer functions (default true). Schedules are validated either way. */
  timers?: boolean;
  /**
   * Log every timer invocation's Executing / Executed pair (default false: only a failed one is logged; timers
   * fire every few seconds and their pairs buried the lines that matter). `npm start`: LOCAL_TIMER_LOG=true.
   */
  timerLog?: boolean;
  /** App settings for %Name% expressions in schedules; default process.env. */
  env?: Record<string, string | undefined>;
  /** Requests with a larger body get 413 before any handler runs. Default 4 MiB. */
  maxBodyBytes?: number;
  /** How long close() waits for in-flight invocations. Default 30 s. */
  drainTimeoutMs?: number;
  /** Run storage-queue functions (default true). */
  queueTriggers?: boolean;
  /** host.json extensions.queues (local/settings.ts readQueueSettings); the host's defaults otherwise. */
  queueSettings?: QueueTriggerSettings;
  /** Told when each invocation ends (start, end, outcome). */
  onInvocation?: (record: InvocationRecord) => void;
  /** AppStartContext.functionAppDirectory; default the cwd. */
  functionAppDirectory?: string;
}

export interface LocalHost {
  /** Origin, e.g. http://127.0.0.1:7071 (routes live under `${url}/${prefix}/`). */
  url: string;
  port: number;
  close(): Promise<void>;
}

const DEFAULT_MAX_BODY = 4 * 1024 * 1024;

/** Replaces %Name% with the app setting, as the host does for trigger properties. */
export function resolveAppSettings(value: string, env: Record<string, string | undefined>, owner: string): string {
  return value.replace(/%([^%]+)%/g, (_, name: string) => {
    const setting = env[name];
    if (setting === undefined) throw new Error(`${owner}: app setting "${name}" is not set.`);
    return setting;
  });
}

function prepareTimers(timers: readonly TimerFunction[], env: Record<string, string | undefined>) {
  return timers.map((fn) => {
    const owner = `Timer function "${fn.name}"`;
    try {
      const schedule: Schedule = parseSchedule(resolveAppSettings(fn.schedule, env, owner));
      nextOccurrence(schedule, new Date()); // throws when it can never fire
      return { fn, schedule };
    } catch (err) {
      throw new Error(`${owner} has an invalid schedule "${fn.schedule}": ${(err as Error).message}`);
    }
  });
}

export async function startLocalHost(options: LocalHostOptions): Promise<LocalHost> {
  const { table, functionKey } = options;
  const logger = options.logger ?? consoleLogger;
  const prefix = (options.prefix ?? 'api').replace(/^\/+|\/+$/g, '');
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
  const drainTimeoutMs = options.drainTimeoutMs ?? 30_000;
  const bindHost = options.host ?? '127.0.0.1';
  const timers = prepareTimers(table.timers, options.env ?? process.env);
  const routes = new RouteTable(table.http);
  const appHookData: Record<string, unknown> = {};
  const env: InvokeEnv = { logger, hooks: table.hooks, appHookData, onInvocation: options.onInvocation };
  const settingsEnv = options.env ?? process.env;
  const inflight = new Set<Promise<unknown>>();
  const track = <T>(p: Promise<T>): Promise<T> => {
    inflight.add(p);
    const done = (): void => void inflight.delete(p);
    p.then(done, done);
    return p;
  };
  let closing = false;

  const coreLogSink = (level: string, category: string, message: string): void => {
    if (level !== 'trace' && level !== 'debug') logLine(logger, category, level, [message]);
  };
  setCoreLogSink(coreLogSink);
  for (const hook of activeHooks(table.hooks, 'appStart')) {
    await hook.callback({ hookData: {}, appHookData, functionAppDirectory: options.functionAppDirectory ?? process.cwd() });
  }

  const handle = async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> => {
    const method = (req.method ?? 'GET').toUpperCase();
    if (closing) {
      return sendProblem(res, 503, 'Service Unavailable', 'The local host is shutting down.', { connection: 'close' });
    }
    const path = url.pathname;
    const lowerPrefix = `/${prefix}`.toLowerCase();
    const inPrefix = prefix === '' || path.toLowerCase() === lowerPrefix || path.toLowerCase().startsWith(`${lowerPrefix}/`);
    const lookup = inPrefix ? routes.find(method, prefix === '' ? path : path.slice(lowerPrefix.length)) : { kind: 'not-found' as const };
    if (lookup.kind === 'not-found') {
      // a path without the route prefix (GET /queues/worker) that would match under it: name the prefix
      const underPrefix = !inPrefix && prefix !== '' ? routes.find(method, path) : undefined;
      const hint = underPrefix && underPrefix.kind !== 'not-found' ? ` Routes are served under /${prefix}: try ${method} /${prefix}${path}.` : '';
      return sendProblem(res, 404, 'Not Found', `No function serves ${method} ${path}.${hint}`);
    }
    if (lookup.kind === 'method-not-allowed') {
      // Azure's host answers a known route with another method 404 (not 405): same here, so clients see one behaviour
      return sendProblem(res, 404, 'Not Found', `No function serves ${method} ${path} (it accepts ${lookup.allowed.join(', ')}).`);
    }
    const fn: HttpFunction = lookup.fn;
    if (functionKey !== undefined && fn.authLevel !== 'anonymous') {
      const given = req.headers['x-functions-key'];
      if (!keyMatches(Array.isArray(given) ? given[0] : given ?? url.searchParams.get('code'), functionKey)) {
        return sendProblem(res, 401, 'Unauthorized', 'A valid function key is required (x-functions-key header or ?code=).');
      }
    }
    const tooLarge = (): void =>
      sendProblem(res, 413, 'Payload Too Large', `The request body exceeds ${maxBody} bytes.`, { connection: 'close' });
    // A declared length over the limit is refused before a byte of it is read; the connection then closes
    if (Number(req.headers['content-length'] ?? 0) > maxBody) return tooLarge();
    const body = await readBody(req, maxBody);
    if (!body.ok) return tooLarge();
    // Azure's host passes a request body on only with a Content-Length; a chunked body arrives empty there, so here too
    const chunked = req.headers['content-length'] === undefined && body.body.length > 0;
    if (chunked) logLine(logger, undefined, 'warn', [`${method} ${path}: a body without Content-Length (chunked) is dropped, as Azure Functions does`]);
    const request = toHttpRequest(req, url.toString(), chunked ? Buffer.alloc(0) : body.body, lookup.params);
    // the client gone before the answer is written (a long-poll client that timed out): the function may stop
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) gone.abort(new Error('the client closed the connection'));
    });
    registerClientGone(request, gone.signal);
    let result: unknown;
    try {
      result = await invokeFunction(fn, request, `HTTP ${method} ${path}`, env);
    } catch {
      return sendProblem(res, 500, 'Internal Server Error', `Function '${fn.name}' failed; see the host log.`);
    }
    try {
      await writeHandlerResult(res, method, result);
    } catch (err) {
      logLine(logger, fn.name, 'error', [`Could not convert the response: ${(err as Error).message}`]);
      if (!res.headersSent) sendProblem(res, 500, 'Internal Server Error', `Function '${fn.name}' returned an invalid response.`);
      else res.destroy();
    }
  };

  const server = createServer((req, res) => {
    const url = requestUrl(req.headers.host, req.url ?? '/', `${bindHost.includes(':') ? `[${bindHost}]` : bindHost}:${port}`);
    if (url === undefined) {
      return sendProblem(res, 400, 'Bad Request', 'The Host header or the request target is malformed (expected host[:port] and a path).', { connection: 'close' });
    }
    const finished = new Promise<void>((resolve) => {
      res.on('close', resolve);
      res.on('finish', resolve);
    });
    void track(
      handle(req, res, url)
        .catch((err: unknown) => {
          if (req.socket.destroyed) {
            // the path only: the query may hold the function key (?code=), and keys never go to the log
            logLine(logger, undefined, 'warning', [`${req.method} ${url.pathname}: the client went away (${(err as Error).message}).`]);
            return;
          }
          logLine(logger, undefined, 'error', [`Request failed: ${(err as Error).stack ?? String(err)}`]);
          if (!res.headersSent) sendProblem(res, 500, 'Internal Server Error', 'The local host failed.');
          else res.destroy();
        })
        .then(() => finished),
    );
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 7071, bindHost, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  const running: RunningTimer[] = options.timers === false
    ? []
    : timers.map(({ fn, schedule }) =>
        startTimer(schedule, fn.runOnStartup, ({ timer, reason }) => track(invokeFunction(fn, timer, reason, env, undefined, options.timerLog !== true))),
      );

  const queueTriggers: RunningQueueTrigger[] = [];
  if (options.queueTriggers !== false) {
    for (const fn of table.queues) {
      const name = resolveAppSettings(fn.queueName, settingsEnv, `Queue function "${fn.name}"`);
      const service = await queueServiceClient(settingsEnv, fn.connection);
      queueTriggers.push(
        startQueueTrigger({
          queue: service.getQueueClient(name),
          poison: service.getQueueClient(`${name}-poison`),
          settings: options.queueSettings ?? HOST_QUEUE_DEFAULTS,
          invoke: (input, metadata) =>
            track(invokeFunction(fn, input, `New queue message detected on '${name}'.`, env, metadata as unknown as Record<string, unknown>)),
          onError: pollFailureLog(name, fn.connection, (line) => logLine(logger, fn.name, 'warning', [line])),
        }),
      );
    }
  }

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= (async () => {
      closing = true;
      running.forEach((t) => t.stop());
      const queuesStopped = Promise.all(queueTriggers.map((t) => t.stop()));
      const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // Like the Functions worker on WorkerTerminate, appTerminate hooks run while invocations may still be
      // in flight: that is the app's signal to stop long work (drain loops) and hand back what it holds.
      const terminated = (async () => {
        for (const hook of activeHooks(table.hooks, 'appTerminate')) {
          try {
            await hook.callback({ hookData: {}, appHookData });
          } catch (err) {
            logLine(logger, undefined, 'error', [`appTerminate hook failed: ${(err as Error).stack ?? String(err)}`]);
          }
        }
      })();
      let timeout: NodeJS.Timeout | undefined;
      const drained = await Promise.race([
        Promise.allSettled([...inflight]).then(() => true),
        new Promise<boolean>((resolve) => (timeout = setTimeout(() => resolve(false), drainTimeoutMs))),
      ]);
      clearTimeout(timeout);
      if (drained) await queuesStopped; // the messages of finished invocations are deleted
      if (!drained) logLine(logger, undefined, 'warning', [`${inflight.size} invocation(s) still running after ${drainTimeoutMs} ms; closing anyway.`]);
      server.closeAllConnections();
      await serverClosed;
      await terminated;
      if (getCoreLogSink() === coreLogSink) setCoreLogSink(undefined);
    })();
    return closed;
  };

  return { url: `http://${bindHost.includes(':') ? `[${bindHost}]` : bindHost}:${port}`, port, close };
}

/**
 * The queue trigger polls with backoff whatever happens: its faults are logged at most once a minute per queue,
 * with the count since, and a storage queue that cannot be reached says in one line what to set.
 */
export function pollFailureLog(queue: string, connection: string, write: (line: string) => void, now: () => number = Date.now): (err: unknown) => void {
  let failures = 0;
  let lastAt = -Infinity;
  return (err) => {
    failures++;
    if (now() - lastAt < 60_000) return;
    lastAt = now();
    const why = storageUnreachable(err, connection) ?? (err as Error).message;
    write(`Polling queue '${queue}' failed (${failures} so far; logged once a minute): ${why}`);
  };
}
