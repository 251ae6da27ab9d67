import { beforeAll, describe, expect, it } from 'vitest';
import { loadFunctionApp, type FunctionTable } from '../../local/functions-core';
import { openApiDocument } from '../../shared/http/openapi';

let table: FunctionTable;
beforeAll(async () => {
  process.env.PGLITE_DATA_DIR = 'memory://';
  table = await loadFunctionApp(() => import('../../functions/index'));
});

type Doc = { openapi: string; paths: Record<string, Record<string, { operationId: string; security?: unknown[]; responses: Record<string, unknown>; parameters?: Array<{ name: string; description?: string }> }>> };
const doc = openApiDocument() as Doc;
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
  it('documents 401 on every keyed route and 503 on every route that reads the database', () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const keyed = !(Array.isArray(op.security) && op.security.length === 0);
        expect('401' in op.responses, `${method} ${path} 401`).toBe(keyed);
        expect('503' in op.responses, `${method} ${path} 503`).toBe(!['openApi', 'dashboard', 'dashboardAsset'].includes(op.operationId));
      }
    }
    expect(Object.keys(doc.paths['/queues/{queue}/messages']!.post!.responses)).toContain('409');
    expect(Object.keys(doc.paths['/responses']!.post!.responses)).toContain('409');
  });
  it('states the configured waitSeconds cap', () => {
    const custom = openApiDocument('/api', { maxWaitSeconds: 30 }) as Doc;
    const wait = custom.paths['/responses']!.get!.parameters!.find((p) => p.name === 'waitSeconds')!;
    expect(wait.description).toBe('Values over 30 (MAX_WAIT_SECONDS) are capped.');
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
