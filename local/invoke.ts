// One function invocation the way the worker runs it: preInvocation hooks, the handler, postInvocation
// hooks, and the host's "Executing …" / "Executed …" lines around it.
import { InvocationContext, type InvocationContextInit } from '@azure/functions';
import { randomUUID } from 'node:crypto';
import type { RegisteredFunction, RegisteredHook } from './functions-core';
import { logLine, type HostLogger } from './log';

export interface InvokeEnv {
  logger: HostLogger;
  hooks: readonly RegisteredHook[];
  /** Shared by every hook of the app (HookContext.appHookData). */
  appHookData: Record<string, unknown>;
  /** Told when each invocation ends (the bench's billed-time log: LOCAL_INVOCATION_LOG). */
  onInvocation?: (record: InvocationRecord) => void;
}

export interface InvocationRecord {
  name: string;
  /** epoch ms */
  start: number;
  end: number;
  ok: boolean;
}

export function activeHooks(hooks: readonly RegisteredHook[], name: string): RegisteredHook[] {
  return hooks.filter((h) => h.name === name && !h.disposed);
}

/** Runs the handler with `triggerInput`; resolves with its result, rejects (after logging) when it fails. */
export async function invokeFunction(
  fn: RegisteredFunction,
  triggerInput: unknown,
  reason: string,
  env: InvokeEnv,
  triggerMetadata?: Record<string, unknown>,
  /** Log the Executing / Executed pair only when the invocation fails (timers firing every few seconds). */
  quiet = false,
): Promise<unknown> {
  const invocationId = randomUUID();
  const startedAt = Date.now();
  const started = performance.now();
  if (!quiet) logLine(env.logger, undefined, 'information', [`Executing 'Functions.${fn.name}' (Reason='${reason}', Id=${invocationId})`]);

  const invocationContext = new InvocationContext({
    invocationId,
    functionName: fn.name,
    logHandler: (level, ...args) => logLine(env.logger, fn.name, level, args),
    options: { trigger: fn.trigger } as InvocationContextInit['options'],
    ...(triggerMetadata ? { triggerMetadata } : {}),
  });
  const hookData: Record<string, unknown> = {};
  let result: unknown;
  let error: unknown;
  let failed = false;
  try {
    const pre = { hookData, appHookData: env.appHookData, invocationContext, inputs: [triggerInput], functionCallback: fn.handler };
    for (const hook of activeHooks(env.hooks, 'preInvocation')) await hook.callback(pre);
    try {
      result = await pre.functionCallback(...pre.inputs, invocationContext);
    } catch (err) {
      error = err;
      failed = true;
    }
    const post = { hookData, appHookData: env.appHookData, invocationContext, inputs: pre.inputs, result, error: failed ? error : null };
    for (const hook of activeHooks(env.hooks, 'postInvocation')) await hook.callback(post);
    result = post.result;
    failed = post.error !== null && post.error !== undefined;
    error = post.error;
  } catch (hookError) {
    error = hookError;
    failed = true;
  }

  const duration = Math.round(performance.now() - started);
  try {
    env.onInvocation?.({ name: fn.name, start: startedAt, end: Date.now(), ok: !failed });
  } catch {
    /* a record sink never fails an invocation */
  }
  if (failed) {
    const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
    logLine(env.logger, fn.name, 'error', [`Exception while executing function: Functions.${fn.name}. ${detail}`]);
  }
  if (!quiet || failed) {
    logLine(env.logger, undefined, 'information', [
      `Executed 'Functions.${fn.name}' (${failed ? 'Failed' : 'Succeeded'}, ${quiet ? `Reason='${reason}', ` : ''}Id=${invocationId}, Duration=${duration}ms)`,
    ]);
  }
  if (failed) throw error;
  return result;
}
