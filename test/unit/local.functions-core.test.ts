import { createRequire } from 'node:module';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CORE_MODULE, installFunctionsCore, loadFunctionApp } from '../../local/functions-core';

describe('local @azure/functions-core', () => {
  it('makes require("@azure/functions-core") resolve once installed', () => {
    installFunctionsCore();
    installFunctionsCore(); // idempotent
    const core = createRequire(path.join(process.cwd(), 'any.js'))(CORE_MODULE) as Record<string, unknown>;
    for (const name of ['registerFunction', 'registerHook', 'setProgrammingModel', 'getProgrammingModel', 'log']) {
      expect(typeof core[name]).toBe('function');
    }
  });

  it('loads an entry by path (relative to the cwd) and returns the same table when asked again', async () => {
    const table = await loadFunctionApp('test/fixtures/sample-functions');
    expect(table.programmingModel?.name).toBe('@azure/functions');
    expect(table.functions.map((f) => f.name)).toEqual(['getItem', 'deleteItem', 'echo', 'ping', 'secret', 'boom', 'slow', 'tick']);
    expect(await loadFunctionApp(path.resolve('test/fixtures/sample-functions.ts'))).toBe(table);
  });

  it('fails loudly when an entry registers nothing', async () => {
    await expect(loadFunctionApp(() => undefined)).rejects.toThrow(/registered nothing.*test mode/s);
  });
});
