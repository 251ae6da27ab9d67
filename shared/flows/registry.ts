import type { FlowContext } from './context';

/**
 * A flow: an async function whose body re-runs from the top on every execution; each named step runs once and
 * its JSON result is checkpointed, so the code between steps is ordinary TypeScript.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type FlowFunction<I = any, O = unknown> = (ctx: FlowContext, input: I) => Promise<O>;

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** Flows by name (the name is persisted in every run's ledger: rename one only by registering both names). */
export class FlowRegistry {
  private readonly flows = new Map<string, FlowFunction>();

  register<I, O>(name: string, flow: FlowFunction<I, O>): this {
    if (!NAME.test(name)) throw new Error(`flow name '${name}' must be 1-100 characters of letters, digits, '.', '_' or '-', starting with a letter or digit`);
    if (typeof flow !== 'function') throw new Error(`flow '${name}' must be an async function (ctx, input) => result`);
    if (this.flows.has(name)) throw new Error(`a flow named '${name}' is already registered`);
    this.flows.set(name, flow as FlowFunction);
    return this;
  }

  get(name: string): FlowFunction | undefined {
    return this.flows.get(name);
  }

  names(): string[] {
    return [...this.flows.keys()].sort();
  }
}
