/**
 * An abort controller made only when its signal is first read. Most handlers never read `signal`, and a Node
 * AbortController (an EventTarget) cost more than the rest of a short job's dispatch: 5 % of a drain's CPU and a
 * share of its garbage. An abort before the first read is kept and applied when the signal is made; as with
 * AbortController, the first reason wins.
 */
export class LazyAbort {
  private controller: AbortController | undefined;
  private reason: unknown;
  private requested = false;

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.requested) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  get aborted(): boolean {
    return this.requested;
  }

  abort(reason: unknown): void {
    if (this.requested) return;
    this.requested = true;
    this.reason = reason;
    this.controller?.abort(reason);
  }
}
