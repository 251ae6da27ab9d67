// The drain-request message: which queues a drain should claim from (worker queues, `response`, `callbacks`)
// and whether the channel sweep should run. A hint only: the SQL table is the truth, so a lost, repeated or
// late request costs latency or a little work, never a job. Sent base64-encoded, as the Functions host's queue
// trigger expects by default (host.json extensions.queues.messageEncoding = base64).

/** The target that asks for a channel sweep rather than a queue drain. */
export const SWEEP_TARGET = '#sweep';
/** The target that asks for an evaluation of the due schedules (sent to surface at a schedule's next slot). */
export const SCHEDULES_TARGET = '#schedules';

export interface DrainRequestMessage {
  /** Queues to drain. */
  queues: string[];
  /** Run the channel sweep (overdue unacked responses to their callbacks). */
  sweep?: boolean;
  /** Evaluate the due schedules (shared/schedules). */
  schedules?: boolean;
}

export function requestFor(target: string): DrainRequestMessage {
  if (target === SCHEDULES_TARGET) return { queues: [], schedules: true };
  return target === SWEEP_TARGET ? { queues: [], sweep: true } : { queues: [target] };
}

export function encodeRequest(message: DrainRequestMessage): string {
  return Buffer.from(JSON.stringify(message), 'utf8').toString('base64');
}

/**
 * What the trigger hands the function: the host decodes base64 and, for JSON text, passes the parsed object.
 * Anything else (a hand-made message, a string) is refused with the reason, and the function drops it.
 */
export function parseRequest(body: unknown): DrainRequestMessage | string {
  let value = body;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      return 'the message is not JSON';
    }
  }
  if (typeof value !== 'object' || value === null) return 'the message is not a JSON object';
  const { queues, sweep, schedules } = value as Record<string, unknown>;
  if (!Array.isArray(queues) || !queues.every((q): q is string => typeof q === 'string')) return '`queues` must be an array of queue names';
  if (sweep !== undefined && typeof sweep !== 'boolean') return '`sweep` must be true or false';
  if (schedules !== undefined && typeof schedules !== 'boolean') return '`schedules` must be true or false';
  return { queues, ...(sweep ? { sweep } : {}), ...(schedules ? { schedules } : {}) };
}
