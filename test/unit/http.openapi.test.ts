import { beforeAll, describe, expect, it } from 'vitest';
import { loadFunctionApp, type FunctionTable } from '../../local/functions-core';
import { openApiDocument } from '../../shared/http/openapi';
import { OpenApiAnswers } from '../support/openapi-answers';

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

describe('OpenAPI answer schemas', () => {
  const answers = new OpenApiAnswers(openApiDocument());
  const conforms = (route: string, method: string, status: number, body: unknown, contentType = 'application/json') =>
    answers.problems({ method, route, status, contentType, body: body === undefined ? '' : JSON.stringify(body) });
  const id = '0f90ca46-76ab-4e35-8c8b-f45638963c75';
  const published = { id, queue: 'worker', availableAt: '2026-12-01T08:39:30.851Z' };

  it('every response schema compiles under Ajv 2020-12 in strict mode', () => {
    let checked = 0;
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const [status, response] of Object.entries(op.responses as Record<string, { $ref?: string; content?: object }>)) {
          const mediaTypes = response.$ref !== undefined ? ['application/problem+json'] : Object.keys(response.content ?? {});
          for (const mediaType of mediaTypes) {
            // checking a JSON body compiles the schema (whether {} conforms does not matter here)
            expect(() => conforms(path, method.toUpperCase(), Number(status), {}, mediaType), `${method} ${path} ${status}`).not.toThrow();
            checked++;
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(60);
  });

  it('declares a body for every answer but 204 and redirects, and none for those', () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const [status, response] of Object.entries(op.responses as Record<string, { $ref?: string; content?: object }>)) {
          const hasBody = response.$ref !== undefined || response.content !== undefined;
          expect(hasBody, `${method.toUpperCase()} ${path} ${status}`).toBe(status !== '204' && !/^30[1278]$/.test(status));
        }
      }
    }
  });

  it('a publish answer matches exactly one of Published and PublishedBatch (strict clients check the oneOf)', () => {
    const route = '/queues/{queue}/messages';
    expect(conforms(route, 'POST', 201, published)).toEqual([]);
    expect(conforms(route, 'POST', 200, { ...published, duplicate: true })).toEqual([]);
    expect(conforms(route, 'POST', 201, { items: [published, { ...published, duplicate: true }] })).toEqual([]);
    expect(conforms(route, 'POST', 201, { items: [] })).not.toEqual([]);
    expect(conforms(route, 'POST', 201, { ...published, extra: 1 })).not.toEqual([]);
    expect(conforms(route, 'POST', 201, { id, queue: 'worker' })).not.toEqual([]);
  });

  it('problem answers need type, title, status and detail; field errors need field and message', () => {
    const route = '/responses';
    const p = { type: 'about:blank', title: 'Bad Request', status: 400, detail: 'no' };
    expect(conforms(route, 'POST', 400, p, 'application/problem+json')).toEqual([]);
    expect(conforms(route, 'POST', 400, { ...p, errors: [{ field: 'id', message: 'must be a UUID' }] }, 'application/problem+json')).toEqual([]);
    expect(conforms(route, 'POST', 400, { ...p, errors: [{ field: 'id' }] }, 'application/problem+json')).not.toEqual([]);
    expect(conforms(route, 'POST', 400, { title: 'Bad Request', status: 400 }, 'application/problem+json')).not.toEqual([]);
    expect(conforms(route, 'POST', 400, p, 'application/json')).not.toEqual([]);
  });

  it('GET /openapi.json declares its JSON body, and the served document conforms to it', () => {
    expect(conforms('/openapi.json', 'GET', 200, openApiDocument('/api', { maxWaitSeconds: 30 }))).toEqual([]);
    expect(conforms('/openapi.json', 'GET', 200, { hello: 1 })).not.toEqual([]);
  });
});
