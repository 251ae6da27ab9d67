import { beforeAll, describe, expect, it } from 'vitest';
import { loadFunctionApp, type FunctionTable } from '../../local/functions-core';
import { openApiDocument } from '../../shared/http/openapi';

let table: FunctionTable;
beforeAll(async () => {
  process.env.PGLITE_DATA_DIR = 'memory://';
  table = await loadFunctionApp(() => import('../../functions/index'));
});

const doc = openApiDocument() as { openapi: string; paths: Record<string, Record<string, { security?: unknown[] }>> };
const documented = () =>
  Object.entries(doc.paths)
    .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
    .sort();
const registered = () => table.http.flatMap((f) => f.methods.map((m) => `${m} /${f.route}`)).sort();

describe('OpenAPI document', () => {
  it('is OpenAPI 3.1', () => {
    expect(doc.openapi).toBe('3.1.0');
  });
  it('documents every registered route, and every documented route is registered', () => {
    expect(documented()).toEqual(registered());
  });
  it('marks exactly the anonymous routes as needing no key', () => {
    const open = Object.entries(doc.paths)
      .flatMap(([path, ops]) => Object.entries(ops).filter(([, op]) => Array.isArray(op.security) && op.security.length === 0).map(([m]) => `${m.toUpperCase()} ${path}`))
      .sort();
    const anonymous = table.http.filter((f) => f.authLevel === 'anonymous').flatMap((f) => f.methods.map((m) => `${m} /${f.route}`)).sort();
    expect(open).toEqual(anonymous);
  });
  it('resolves every $ref', () => {
    const text = JSON.stringify(doc);
    const refs = [...text.matchAll(/"\$ref":"#\/([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length, '$refs in the document').toBeGreaterThan(5);
    for (const ref of refs) {
      const target = ref.split('/').reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], doc);
      expect(target, ref).toBeDefined();
    }
  });
});
