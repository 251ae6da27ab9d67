import { describe, expect, it } from 'vitest';
import type { HttpFunction } from '../../local/functions-core';
import { RouteTable } from '../../local/routes';

const fn = (name: string, route: string, methods = ['GET']): HttpFunction => ({
  kind: 'http',
  name,
  route,
  methods,
  authLevel: 'anonymous',
  handler: () => undefined,
  metadata: { name, bindings: {} },
  trigger: {},
});

function find(table: RouteTable, method: string, path: string): { name?: string; params?: Record<string, string>; kind: string } {
  const r = table.find(method, path);
  return r.kind === 'found' ? { kind: r.kind, name: r.fn.name, params: r.params } : { kind: r.kind };
}

describe('local host route templates', () => {
  it('matches {param} segments and decodes them', () => {
    const t = new RouteTable([fn('requeue', 'queues/{queue}/deadletters/{id}/requeue', ['POST'])]);
    expect(find(t, 'POST', '/queues/work%2Fer/deadletters/42/requeue')).toEqual({
      kind: 'found', name: 'requeue', params: { queue: 'work/er', id: '42' },
    });
    expect(find(t, 'POST', '/queues/worker/deadletters/42/requeue/')).toMatchObject({ kind: 'found' });
    expect(find(t, 'POST', '/queues/worker/deadletters/42')).toEqual({ kind: 'not-found' });
  });

  it('prefers literal segments over parameters whatever the registration order', () => {
    const t = new RouteTable([fn('byId', 'items/{id}'), fn('special', 'items/special')]);
    expect(find(t, 'GET', '/items/special').name).toBe('special');
    expect(find(t, 'GET', '/items/other').name).toBe('byId');
  });

  it('supports optional and catch-all parameters', () => {
    const t = new RouteTable([fn('opt', 'files/{name?}'), fn('rest', 'blobs/{*path}')]);
    expect(find(t, 'GET', '/files')).toEqual({ kind: 'found', name: 'opt', params: {} });
    expect(find(t, 'GET', '/files/a.txt').params).toEqual({ name: 'a.txt' });
    expect(find(t, 'GET', '/blobs/a/b/c.txt').params).toEqual({ path: 'a/b/c.txt' });
    expect(find(t, 'GET', '/blobs').params).toEqual({});
  });

  it('checks int and guid constraints', () => {
    const t = new RouteTable([fn('num', 'n/{id:int}'), fn('uuid', 'u/{id:guid}')]);
    expect(find(t, 'GET', '/n/12').params).toEqual({ id: '12' });
    expect(find(t, 'GET', '/n/abc').kind).toBe('not-found');
    expect(find(t, 'GET', '/u/0f8fad5b-d9cb-469f-a165-70867728950e').kind).toBe('found');
    expect(find(t, 'GET', '/u/nope').kind).toBe('not-found');
  });

  it('reports method-not-allowed with the methods the matching routes accept', () => {
    const t = new RouteTable([fn('get', 'w/{id}', ['GET']), fn('del', 'w/{id}', ['DELETE'])]);
    expect(t.find('PUT', '/w/1')).toEqual({ kind: 'method-not-allowed', allowed: ['GET', 'DELETE'] });
    expect(find(t, 'DELETE', '/w/1').name).toBe('del');
  });
});
