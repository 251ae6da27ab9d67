// What the schedule function files share: the rejection as a problem answer.

import { problem, type HttpAnswer } from './problem';
import { ScheduleRejectedError } from '../schedules/service';

/** A ScheduleRejectedError as its 400/413 problem; undefined for any other error (the caller's failureAnswer). */
export function rejectionAnswer(err: unknown): HttpAnswer | undefined {
  return err instanceof ScheduleRejectedError ? problem(err.status, err.detail, err.errors) : undefined;
}

export const isSchedulePayloadPath = (path: readonly (string | number)[]) => path.length === 1 && path[0] === 'payload';
