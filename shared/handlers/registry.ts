import type { JobHandler } from '../transport/job';
import { echoHandler } from './echo';
import { forwardingHandler } from './forwarder';

/** A handler the engine builds from data: the echo sample, or a POST to an HTTP endpoint. */
export type HandlerSpec = { kind: 'echo' } | { kind: 'forward'; url: string; timeoutMs?: number };

export const DEFAULT_FORWARD_TIMEOUT_MS = 30_000;

export function handlerFromSpec(spec: HandlerSpec): JobHandler {
  return spec.kind === 'forward' ? forwardingHandler(spec.url, spec.timeoutMs ?? DEFAULT_FORWARD_TIMEOUT_MS) : echoHandler;
}

/**
 * In-code handlers by queue name. The app keeps one in handlers/index.ts (one `register` line per handler); a
 * queue whose setting QUEUE__<key>__HANDLER is `code` runs the handler registered under its name. Not a
 * module-level table: whoever composes the app owns the instance.
 */
export class HandlerRegistry {
  private readonly handlers = new Map<string, JobHandler>();

  register(queue: string, handler: JobHandler): this {
    if (typeof handler !== 'function') throw new TypeError(`the handler registered for queue '${queue}' is not a function`);
    if (this.handlers.has(queue)) throw new Error(`a handler is already registered for queue '${queue}'`);
    this.handlers.set(queue, handler);
    return this;
  }

  get(queue: string): JobHandler | undefined {
    return this.handlers.get(queue);
  }

  names(): string[] {
    return [...this.handlers.keys()];
  }
}
