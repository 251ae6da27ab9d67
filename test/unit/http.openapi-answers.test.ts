// The answer checker the e2e harness runs on every answer: it must catch each kind of drift between the
// OpenAPI document and what the app sends, and say what differs.
import { describe, expect, it } from 'vitest';
import { openApiAnswers } from '../support/openapi-answers';

const checker = openApiAnswers();
const problemBody = (status: number) => JSON.stringify({ type: 'about:blank', title: 'Not Found', status, detail: 'x' });

describe('OpenAPI answer checker', () => {
  it('maps concrete paths to the document\'s templates, the most literal first, literals without regard to case', () => {
    expect(checker.routeOf('/queues/worker')).toBe('/queues/{queue}');
    expect(checker.routeOf('/queues/worker/messages?x=1')).toBe('/queues/{queue}/messages');
    expect(checker.routeOf('/Queues/worker/DeadLetters/abc/requeue')).toBe('/queues/{queue}/deadletters/{id}/requeue');
    expect(checker.routeOf('/waiters/abc/')).toBe('/waiters/{registrationId}');
    expect(checker.routeOf('/openapi.json')).toBe('/openapi.json');
    expect(checker.routeOf('/nothing/here')).toBeUndefined();
  });

  it('accepts a conforming answer, and 204 without a body', () => {
    const stats = {
      queue: 'worker',
      ready: 1,
      delayed: 0,
      leased: 0,
      deadLettered: 0,
      oldestReadyAgeSeconds: null,
      paused: false,
      pausedAt: null,
      backoffUntil: null,
      route: { handler: 'echo' },
      policy: {
        maxDeliveryAttempts: 5,
        redeliveryDelaySeconds: 5,
        redeliveryMaxDelaySeconds: 300,
        lockTimeoutSeconds: 30,
        batchSize: 16,
        prefetch: 16,
        concurrency: 16,
        deadLetter: true,
        concurrencyLimit: 3,
        rateLimitPerSecond: 2.5,
        rateLimitBurst: 1,
      },
    };
    expect(checker.problems({ method: 'GET', route: '/queues/{queue}', status: 200, contentType: 'application/json; charset=utf-8', body: JSON.stringify(stats) })).toEqual([]);
    expect(checker.problems({ method: 'DELETE', route: '/waiters/{registrationId}', status: 204, contentType: null, body: '' })).toEqual([]);
  });

  it('refuses an undocumented status, a body on a bodiless status, a missing body, a wrong media type, a wrong shape', () => {
    const problems = (status: number, contentType: string | null, body: string) => checker.problems({ method: 'GET', route: '/queues/{queue}', status, contentType, body });
    expect(problems(418, 'application/problem+json', problemBody(418))[0]).toMatch(/status 418 is not documented/);
    expect(checker.problems({ method: 'DELETE', route: '/waiters/{registrationId}', status: 204, contentType: 'text/plain', body: 'gone' })[0]).toMatch(/without a body/);
    expect(problems(200, 'application/json', '')[0]).toMatch(/not JSON/);
    expect(problems(200, 'text/plain', 'hi')[0]).toMatch(/media type 'text\/plain' is not documented/);
    expect(problems(200, 'application/json', JSON.stringify({ queue: 'worker', ready: -1 })).join('\n')).toMatch(/must have required property 'delayed'[\s\S]*\/ready must be >= 0/);
    expect(problems(200, 'application/json', JSON.stringify({ queue: 'w', ready: 0, delayed: 0, leased: 0, deadLettered: 0, oldestReadyAgeSeconds: 0, extra: 1 })).join()).toMatch(/additional properties \('extra'\)/);
  });

  it('a method no operation serves must be the host\'s 404 problem', () => {
    expect(checker.problems({ method: 'PUT', route: '/queues/{queue}', status: 404, contentType: 'application/problem+json', body: problemBody(404) })).toEqual([]);
    expect(checker.problems({ method: 'PUT', route: '/queues/{queue}', status: 200, contentType: 'application/json', body: '{}' })[0]).toMatch(/must be a 404/);
    expect(checker.problems({ method: 'GET', route: undefined, status: 404, contentType: 'application/json', body: '{}' })[0]).toMatch(/media type/);
    // HEAD: status and media type only, since the body never comes
    expect(checker.problems({ method: 'HEAD', route: '/health', status: 404, contentType: 'application/problem+json', body: '' })).toEqual([]);
    expect(checker.problems({ method: 'HEAD', route: '/health', status: 200, contentType: 'application/json', body: '' })[0]).toMatch(/must be a 404/);
  });

  it('throws a readable error naming the operation, the status and what differs', () => {
    expect(() => checker.assertConforms({ method: 'POST', route: '/waiters', status: 201, contentType: 'application/json', body: '{"registrationId":"nope"}' })).toThrow(
      /POST \/waiters answered 201 application\/json, which the OpenAPI document does not allow:\n {2}- .*expiresAt[\s\S]*body: \{"registrationId":"nope"\}/,
    );
  });
});
