// SCHEDULES (static schedules) and the schedule drain request's message.
import { describe, expect, it } from 'vitest';
import { encodeRequest, parseRequest, requestFor, SCHEDULES_TARGET } from '../../shared/drain-requests/message';
import { RawJson } from '../../shared/json/raw-json';
import { staticSchedules } from '../../shared/settings/schedules';

describe('SCHEDULES', () => {
  it('is a JSON object of name → schedule; the payload is kept as written', () => {
    const list = staticSchedules({ SCHEDULES: '{"nightly":{"queue":"worker","cron":"0 0 2 * * *","payload":{"n":9007199254740993}}}' });
    expect(list).toHaveLength(1);
    expect(list[0]!.name).toBe('nightly');
    const input = list[0]!.input as { payload: RawJson; cron: string };
    expect(input.cron).toBe('0 0 2 * * *');
    expect(input.payload).toBeInstanceOf(RawJson);
    expect(input.payload.text).toBe('{"n":9007199254740993}');
  });

  it('unset or blank: none', () => {
    expect(staticSchedules({})).toEqual([]);
    expect(staticSchedules({ SCHEDULES: '  ' })).toEqual([]);
  });

  it.each([
    ['{not json', /SCHEDULES is not JSON/],
    ['[1]', /must be a JSON object/],
    ['{"a":1}', /schedule 'a' must be an object/],
  ])('refuses %s', (text, message) => {
    expect(() => staticSchedules({ SCHEDULES: text })).toThrow(message);
  });
});

describe('the schedule drain request', () => {
  it('asks for an evaluation and round-trips', () => {
    const m = requestFor(SCHEDULES_TARGET);
    expect(m).toEqual({ queues: [], schedules: true });
    expect(parseRequest(Buffer.from(encodeRequest(m), 'base64').toString('utf8'))).toEqual(m);
    expect(parseRequest({ queues: ['a'], sweep: true })).toEqual({ queues: ['a'], sweep: true });
    expect(parseRequest({ queues: [], schedules: 'yes' })).toBe('`schedules` must be true or false');
  });
});
