import type { Logger } from '../log';
import { isTransientError } from '../sql/transient';
import { problem, type HttpAnswer } from './problem';

/** A store failure as an answer: transient (throttling, failover, a dropped connection) = 503 + Retry-After. */
export function failureAnswer(err: unknown, logger: Logger, what: string): HttpAnswer {
  if (isTransientError(err)) {
    logger.warn(`${what} failed transiently`, err);
    const answer = problem(503, `${what} failed because the database is unavailable or throttling; retry shortly`);
    return { ...answer, headers: { ...answer.headers, 'retry-after': '5' } };
  }
  logger.error(`${what} failed`, err);
  return problem(500, `${what} failed unexpectedly; the function log has the details`);
}
