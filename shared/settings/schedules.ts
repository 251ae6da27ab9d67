// SCHEDULES: static schedules from an app setting, applied at start-up by shared/schedules/static-schedules.ts.
// A JSON object of name → schedule, each as the PUT body: {"nightly": {"queue": "worker", "cron": "0 0 2 * * *",
// "timeZone": "Europe/Berlin", "payload": {…}}}. Schedules made over HTTP are not touched; deleting one from the
// setting does not delete its row (DELETE /api/schedules/{name} does).

import type { Env } from '../env';
import { rawJsonAt } from '../json/raw-json';
import type { StaticSchedule } from '../schedules/static-schedules';

export const SCHEDULES_SETTING = 'SCHEDULES';

/** Throws with the setting's name when it is not a JSON object of objects; each schedule is validated when applied. */
export function staticSchedules(env: Env): StaticSchedule[] {
  const text = env[SCHEDULES_SETTING]?.trim();
  if (!text) return [];
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`${SCHEDULES_SETTING} is not JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new Error(`${SCHEDULES_SETTING} must be a JSON object of schedule name → {"queue" or "topic", "cron", …}`);
  }
  return Object.entries(value as Record<string, unknown>).map(([name, input]) => {
    if (input === null || typeof input !== 'object' || Array.isArray(input)) throw new Error(`${SCHEDULES_SETTING}: schedule '${name}' must be an object`);
    // the payload as written in the setting, byte for byte (a JSON.parse would round big numbers)
    const payload = rawJsonAt(text, [name, 'payload']);
    return { name, input: payload ? { ...input, payload } : input };
  });
}

