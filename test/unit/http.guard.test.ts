// A throwing HTTP handler still answers the app's own problem+json (Azure's host would send an empty 500).
import { HttpRequest, InvocationContext } from '@azure/functions';
import { describe, expect, it } from 'vitest';
import { guarded } from '../../shared/http/guard';

const request = () => new HttpRequest({ method: 'GET', url: 'http://localhost/api/x' });
function context(): InvocationContext {
  const c = new InvocationContext({ functionName: 'x' });
  c.error = () => undefined;
  c.warn = () => undefined;
  return c;
}

describe('guarded HTTP handlers', () => {
  it('a bug is a 500 problem naming what failed, without the error text', async () => {
    const res = await guarded('reading things', async () => {
      throw new Error('secret internals');
    })(request(), context());
    expect(res.status).toBe(500);
    expect((res.headers as Record<string, string>)['content-type']).toBe('application/problem+json');
    expect(String(res.body)).toMatch(/reading things failed unexpectedly/);
    expect(String(res.body)).not.toMatch(/secret internals/);
  });
  it('a transient fault (the database is failing over) is a 503 with Retry-After', async () => {
    const res = await guarded('publishing', async () => {
      throw Object.assign(new Error('Database is not currently available'), { number: 40613 });
    })(request(), context());
    expect(res.status).toBe(503);
    expect((res.headers as Record<string, string>)['retry-after']).toBe('5');
  });
  it('passes a normal answer through', async () => {
    expect(await guarded('x', async () => ({ status: 204 }))(request(), context())).toEqual({ status: 204 });
  });
});
