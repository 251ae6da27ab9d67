// Starts the real function app (functions/index.ts) in our local host on a free port, with the given
// settings, and captures its log lines. Every answer the e2e suite receives through api() or checkedFetch() is
// checked against the app's OpenAPI document (a mismatch fails the test with what differs).
import { loadFunctionApp } from '../../local/functions-core';
import { startLocalHost, type LocalHost } from '../../local/host';
import { getRuntime } from '../../shared/runtime';
import { checkAnswer } from '../support/openapi-answers';
import { storeSettings } from './app-harness-store';

export interface RunningApp {
  url: string;
  api: (path: string, init?: RequestInit) => Promise<Response>;
  logs: string[];
  host: LocalHost;
  close(): Promise<void>;
}

export async function startApp(settings: Record<string, string>, options: { functionKey?: string } = {}): Promise<RunningApp> {
  Object.assign(process.env, storeSettings(settings));
  const table = await loadFunctionApp(() => import('../../functions/index'));
  const logs: string[] = [];
  const host = await startLocalHost({ table, port: 0, timers: true, logger: (l) => logs.push(l), functionKey: options.functionKey });
  // Open the pool (and PGlite, seconds on a busy machine) here, inside the hook's time, not in the first test's.
  // A runtime that cannot start is left for the tests to see through the API.
  await getRuntime().catch(() => undefined);
  const api = (path: string, init?: RequestInit) => checkedFetch(`${host.url}/api/${path}`, init);
  return { url: host.url, api, logs, host, close: () => host.close() };
}

/** Settings for a timer drain every second that ends soon after the queue runs dry: what most e2e files want. */
export const TIMER_DRAIN_EVERY_SECOND: Readonly<Record<string, string>> = {
  DRAIN_WORKER_SCHEDULE: '*/1 * * * * *',
  DRAIN_BUDGET_SECONDS: '5',
  DRAIN_IDLE_GRACE_SECONDS: '0.5',
};

export const postJson = (body: unknown, extra: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...extra },
  body: typeof body === 'string' ? body : JSON.stringify(body),
});

/** fetch() for a URL under a host's /api/, with the answer checked against the OpenAPI document. */
export async function checkedFetch(url: string, init?: RequestInit): Promise<Response> {
  const res = await fetch(url, init);
  const path = new URL(url).pathname.replace(/^\/api(?=\/|$)/i, '');
  await checkAnswer(init?.method ?? 'GET', path, res);
  return res;
}
