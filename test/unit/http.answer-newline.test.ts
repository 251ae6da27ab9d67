// Every JSON answer of the app ends with a newline, so answers curl prints one after another stay on lines of their
// own (the README's walkthrough runs several curls in one block). The answers are built in shared/http/problem.ts;
// @azure/functions' HttpResponse is what Azure's worker and the local host make of them, so the text is checked there.
import { HttpResponse } from '@azure/functions';
import { describe, expect, it } from 'vitest';
import { RawJson } from '../../shared/json/raw-json';
import { json, jsonWithPayloads, problem, type HttpAnswer } from '../../shared/http/problem';

async function sent(answer: HttpAnswer): Promise<string> {
  return new HttpResponse(answer).text();
}

describe('JSON answers end with a newline', () => {
  it('json(): the value, then a newline', async () => {
    const text = await sent(json(200, { queue: 'worker', ready: 0 }));
    expect(text).toBe('{"queue":"worker","ready":0}\n');
  });

  it('jsonWithPayloads(): the payload as sent, then a newline', async () => {
    const text = await sent(jsonWithPayloads(200, { payload: new RawJson('9007199254740993') }));
    expect(text).toBe('{"payload":9007199254740993}\n');
  });

  it('problem(): application/problem+json, then a newline', async () => {
    const answer = problem(400, 'bad', [{ field: 'payload', message: 'is required' }]);
    expect(answer.headers?.['content-type']).toBe('application/problem+json');
    const text = await sent(answer);
    expect(text.endsWith('}\n')).toBe(true);
    expect(JSON.parse(text)).toMatchObject({ status: 400, detail: 'bad', errors: [{ field: 'payload' }] });
  });
});
