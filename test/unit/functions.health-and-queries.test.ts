// Health answers without leaking driver text to anonymous callers; numeric query parameters are read strictly.
import { HttpRequest, InvocationContext } from '@azure/functions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryNumber } from '../../shared/http/query';
import { setEnv } from '../support/env';

let shutdownRuntime: (() => Promise<void>) | undefined;
let restoreEnv: (() => void) | undefined;

beforeAll(() => {
  restoreEnv = setEnv({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' });
});

afterAll(async () => {
  await shutdownRuntime?.();
  restoreEnv?.();
});

describe('health with the database down', () => {
  it('answers 503 with Retry-After and no driver text (the detail goes to the log)', async () => {
    const runtime = await import('../../shared/runtime');
    shutdownRuntime = runtime.shutdownRuntime;
    const { health } = await import('../../functions/health');
    const warnings: unknown[][] = [];
    const context = new InvocationContext({ functionName: 'health' });
    context.warn = (...args: unknown[]) => void warnings.push(args);
    const res = await health(new HttpRequest({ method: 'GET', url: 'http://localhost/api/health' }), context);
    expect(res.status).toBe(503);
    expect((res.headers as Record<string, string>)['Retry-After']).toBe('5');
    const body = String(res.body);
    expect(JSON.parse(body)).toMatchObject({ status: 'unavailable', store: 'postgres' });
    expect(body).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|nowhere/);
    expect(JSON.stringify(warnings.flat().map((w) => (w instanceof Error ? w.message : w)))).toMatch(/ECONNREFUSED/);
  });
});

describe('numeric query parameters', () => {
  const q = (query: string) => ({ query: new URLSearchParams(query) });
  const top = { fallback: 50, min: 1, max: 1000, integer: true };
  it('accept plain decimal digits in range, and the fallback when absent', () => {
    expect(queryNumber(q(''), 'top', top)).toEqual({ ok: true, value: 50 });
    expect(queryNumber(q('top=7'), 'top', top)).toEqual({ ok: true, value: 7 });
    expect(queryNumber(q('waitSeconds=2.5'), 'waitSeconds', { fallback: 0, min: 0, max: 120 })).toEqual({ ok: true, value: 2.5 });
  });
  it('refuse empty, spaced, hex, exponent, fractional integers, negatives and repeats', () => {
    for (const bad of ['top=', 'top=%20', 'top=0x10', 'top=1e2', 'top=1.0', 'top=-1', 'top=0', 'top=1001', 'top=1&top=2']) {
      expect(queryNumber(q(bad), 'top', top), bad).toMatchObject({ ok: false, errors: [{ field: 'top' }] });
    }
  });
  it('cap a value over the maximum when the parameter documents a cap', () => {
    expect(queryNumber(q('waitSeconds=500'), 'waitSeconds', { fallback: 0, min: 0, max: 120, clamp: true })).toEqual({ ok: true, value: 120 });
  });
  it('a capped parameter’s refusal says the cap as it works: over the maximum counts as the maximum (issue 27)', () => {
    const refused = queryNumber(q('waitSeconds=abc'), 'waitSeconds', { fallback: 0, min: 0, max: 120, clamp: true });
    expect(refused).toMatchObject({ ok: false, detail: 'waitSeconds must be a number of 0 or more (values over 120 count as 120)' });
    expect(queryNumber(q('top=abc'), 'top', { fallback: 50, min: 1, max: 500, integer: true })).toMatchObject({ detail: 'top must be an integer from 1 to 500' });
  });
});
