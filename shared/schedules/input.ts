// A schedule as the HTTP API, the engine API and the SCHEDULES setting give it, validated into a definition. Every
// problem is reported with its field; payload, headers and correlationId follow the publish's rules.

import { parsePublishBody } from '../transport/publish-request';
import { validateQueueName } from '../sql/identifiers';
import type { FieldError } from '../validation';
import { DEFAULT_TIME_ZONE, parseCron, ScheduleCronError, type CronSpec } from './cron';
import { MAX_CATCH_UP } from './misfire';
import type { MisfirePolicy, ScheduleDefinition, ScheduleTarget } from './types';

export interface ScheduleInput {
  /** Exactly one of queue and topic. */
  queue?: string;
  topic?: string;
  /** NCRONTAB: six fields (second minute hour day month day-of-week) or five. */
  cron: string;
  /** IANA zone; default UTC. */
  timeZone?: string;
  /** Any JSON value; default null. */
  payload?: unknown;
  headers?: Record<string, string>;
  correlationId?: string;
  paused?: boolean;
  /** 'skip' (default): missed slots do not run; { catchUp: n }: the newest n missed slots run late. */
  misfire?: 'skip' | { catchUp: number };
}

export const MAX_SCHEDULE_NAME_LENGTH = 200;
const FIELDS = ['queue', 'topic', 'cron', 'timeZone', 'payload', 'headers', 'correlationId', 'paused', 'misfire'];

export type ParsedSchedule = { ok: true; definition: ScheduleDefinition; spec: CronSpec } | { ok: false; status: 400 | 413; detail: string; errors: FieldError[] };

export function scheduleNameProblem(name: string): string | null {
  const why = validateQueueName(name);
  return why && why.replace(/^queue name/, 'schedule name');
}

/** `targetProblem`: why the queue or topic cannot be published to (unknown), or null. */
export function parseScheduleInput(
  name: string,
  body: unknown,
  maxMessageBytes: number,
  targetProblem: (target: ScheduleTarget) => string | null,
): ParsedSchedule {
  const errors: FieldError[] = [];
  const nameWhy = scheduleNameProblem(name);
  if (nameWhy) errors.push({ field: 'name', message: nameWhy });
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return { ok: false, status: 400, detail: 'the schedule must be a JSON object', errors: [...errors, { field: '', message: 'must be an object like {"queue": …, "cron": …}' }] };
  }
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b)) if (!FIELDS.includes(key)) errors.push({ field: key, message: `is not a known field (${FIELDS.join(', ')})` });

  let target: ScheduleTarget | undefined;
  if ((b.queue === undefined) === (b.topic === undefined)) errors.push({ field: 'queue', message: 'give exactly one of queue and topic' });
  else {
    const kind = b.queue !== undefined ? 'queue' : 'topic';
    const value = b[kind];
    if (typeof value !== 'string' || value === '') errors.push({ field: kind, message: `must be a ${kind} name` });
    else {
      const t: ScheduleTarget = { kind, name: value };
      target = t;
      const why = targetProblem(t);
      if (why) errors.push({ field: kind, message: why });
    }
  }

  let timeZone = DEFAULT_TIME_ZONE;
  if (b.timeZone !== undefined) {
    if (typeof b.timeZone !== 'string') errors.push({ field: 'timeZone', message: 'must be an IANA time zone name' });
    else timeZone = b.timeZone;
  }
  let spec: CronSpec | undefined;
  if (typeof b.cron !== 'string') errors.push({ field: 'cron', message: 'is required: an NCRONTAB expression such as "0 */5 * * * *"' });
  else if (typeof b.timeZone === 'string' || b.timeZone === undefined) {
    try {
      spec = parseCron(b.cron, timeZone);
    } catch (err) {
      if (!(err instanceof ScheduleCronError)) throw err;
      errors.push({ field: err.field, message: err.message });
    }
  }

  let paused = false;
  if (b.paused !== undefined) {
    if (typeof b.paused !== 'boolean') errors.push({ field: 'paused', message: 'must be true or false' });
    else paused = b.paused;
  }

  let misfire: MisfirePolicy = { policy: 'skip' };
  if (b.misfire !== undefined && b.misfire !== 'skip') {
    const m = b.misfire as { catchUp?: unknown } | null;
    const n = typeof m === 'object' && m !== null && Object.keys(m).length === 1 ? m.catchUp : undefined;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_CATCH_UP) {
      errors.push({ field: 'misfire', message: `must be "skip" or {"catchUp": n} with n from 1 to ${MAX_CATCH_UP}` });
    } else misfire = { policy: 'catchUp', max: n };
  }

  // payload, headers and correlationId by the publish's own rules (sizes, reserved AR-* names, control characters)
  const message: Record<string, unknown> = { payload: 'payload' in b ? b.payload : null };
  if (b.headers !== undefined) message.headers = b.headers;
  if (b.correlationId !== undefined) message.correlationId = b.correlationId;
  const published = parsePublishBody(message, target?.name ?? 'schedule', maxMessageBytes);
  if (!published.ok) {
    if (published.status === 413 && errors.length === 0) return { ok: false, status: 413, detail: 'the schedule\'s payload or headers are too large', errors: published.errors };
    errors.push(...published.errors);
  }
  if (errors.length > 0 || !published.ok || !target || !spec) {
    return { ok: false, status: 400, detail: 'the schedule has invalid fields; nothing was changed', errors };
  }
  const m = published.messages[0]!;
  return {
    ok: true,
    spec,
    definition: { name, target, cron: spec.expression, timeZone, payloadJson: m.payloadJson, headers: m.headers, paused, misfire },
  };
}
