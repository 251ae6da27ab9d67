import { beforeAll, describe, expect, it } from 'vitest';
import { loadFunctionApp, type FunctionTable, type RegisteredFunction } from '../../local/functions-core';
import { invokeFunction, type InvokeEnv } from '../../local/invoke';

let table: FunctionTable;
const fnNamed = (name: string): RegisteredFunction => table.functions.find((f) => f.name === name)!;

beforeAll(async () => {
  // Registered inline through the real library, after loadFunctionApp has installed the core.
  table = await loadFunctionApp(async () => {
    const { app } = await import('@azure/functions');
    app.http('greet', { handler: (request) => ({ body: `hello ${String(request)}` }) });
    app.http('fails', { handler: () => { throw new Error('nope'); } });
    app.hook.preInvocation((ctx) => {
      ctx.hookData.seen = ctx.invocationContext.functionName;
      if (ctx.invocationContext.functionName === 'greet') ctx.inputs = ['hooked'];
    });
    app.hook.postInvocation((ctx) => {
      if (ctx.invocationContext.functionName === 'greet') ctx.result = { body: `${String(ctx.hookData.seen)}: ${(ctx.result as { body: string }).body}` };
      if (ctx.error instanceof Error && ctx.error.message === 'nope') ctx.error = null; // swallowed
    });
  });
});

describe('local host invocation hooks', () => {
  it('lets preInvocation change the inputs and postInvocation the result, sharing hookData', async () => {
    const logs: string[] = [];
    const env: InvokeEnv = { logger: (l) => logs.push(l), hooks: table.hooks, appHookData: {} };
    expect(await invokeFunction(fnNamed('greet'), 'original', 'test', env)).toEqual({ body: 'greet: hello hooked' });
    expect(logs.some((l) => l.includes("Executed 'Functions.greet' (Succeeded"))).toBe(true);
  });

  it('lets postInvocation clear an error', async () => {
    const env: InvokeEnv = { logger: () => undefined, hooks: table.hooks, appHookData: {} };
    await expect(invokeFunction(fnNamed('fails'), undefined, 'test', env)).resolves.toBeUndefined();
  });
});
