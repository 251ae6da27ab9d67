// Publishing and the store calls' retries: attempts of a publish, the ids it generates, the largest payload, and
// the backoff per transient fault class (SQL_RETRY_*) every retried store call uses.

import { DEFAULT_RETRY_CLASSES, retryPolicy, type RetryPolicy } from '../sql/retry';
import { idGeneration, type IdGenerationMode } from '../transport/ids';
import type { Readers } from './env';

export interface PublishSettings {
  publish: { maxAttempts: number; classes: RetryPolicy; idGeneration: IdGenerationMode };
  /** Backoff per transient class for every retried store call (publish, claims, response insert, recovery claim). */
  retry: RetryPolicy;
  maxMessageBytes: number;
}

export function readRetry({ num }: Readers, problems: string[]): RetryPolicy {
  try {
    const cls = (name: string, c: keyof RetryPolicy) => ({
      baseMs: num(`SQL_RETRY_${name}_BASE_MS`, DEFAULT_RETRY_CLASSES[c].baseMs, { min: 1, max: 600_000 }),
      maxMs: num(`SQL_RETRY_${name}_MAX_MS`, DEFAULT_RETRY_CLASSES[c].maxMs, { min: 1, max: 600_000 }),
    });
    return retryPolicy({ lock: cls('LOCK', 'lock'), throttling: cls('THROTTLING', 'throttling'), failover: cls('FAILOVER', 'failover'), connection: cls('CONNECTION', 'connection') });
  } catch (e) {
    problems.push(`SQL_RETRY_*: ${(e as Error).message}`);
    return DEFAULT_RETRY_CLASSES;
  }
}

export function readPublish(read: Readers, problems: string[]): PublishSettings {
  const retry = readRetry(read, problems);
  return {
    publish: { maxAttempts: read.num('PUBLISH_MAX_ATTEMPTS', 3, { min: 1, max: 100, integer: true }), classes: retry, idGeneration: idGeneration(read.str('ID_GENERATION'), problems) },
    retry,
    maxMessageBytes: read.num('MAX_MESSAGE_BYTES', 262144, { min: 16, max: 64 * 1024 * 1024, integer: true }),
  };
}
