// Same-process wake-up: a publish signals its queue so a waiting drain loop claims at once instead of
// sleeping out its poll delay. Other processes are not told (SQL Server has no NOTIFY); they poll.

type Waiter = () => void;

export class WakeSignal {
  private readonly waiters = new Map<string, Set<Waiter>>();
  /** Queues notified while nobody waited (the loop was busy claiming): the next wait returns at once. */
  private readonly pending = new Set<string>();

  /** Per queue, the drain loops of this process that last reported room to claim into. */
  private readonly roomy = new Map<string, Set<object>>();

  /** A drain loop's report, each turn: it has room to claim into (false also when it ends). */
  room(queue: string, loop: object, hasRoom: boolean): void {
    let set = this.roomy.get(queue);
    if (hasRoom) {
      if (!set) this.roomy.set(queue, (set = new Set()));
      set.add(loop);
    } else if (set?.delete(loop) && set.size === 0) this.roomy.delete(queue);
  }

  /**
   * A drain loop of this process runs the queue with room to claim into: a row published for it now is claimed
   * here once notify() wakes it (it waits on this signal, or claims again as soon as its claim in flight answers or
   * its prefetched jobs run low), so a publisher may skip waking other processes (flows' carried jobs do). What that
   * costs them is bounded: a running drain loop elsewhere claims an un-notified row at its next empty-queue poll
   * (EMPTY_POLL_DELAY_MS, 250 ms), and in queue mode the announcer's drain request goes out whatever. A loop does not
   * go idle with such a wake pending; should it end before it claims (a shutdown, its budget), the row waits in the
   * same way.
   */
  claimsPromptly(queue: string): boolean {
    return (this.roomy.get(queue)?.size ?? 0) > 0 || (this.waiters.get(queue)?.size ?? 0) > 0;
  }

  /** A wake for the queue came while no loop waited: the next wait returns at once. */
  pendingFor(queue: string): boolean {
    return this.pending.has(queue);
  }

  notify(queue: string): void {
    const set = this.waiters.get(queue);
    if (!set || set.size === 0) {
      this.pending.add(queue);
      return;
    }
    this.waiters.delete(queue);
    for (const wake of set) wake();
  }

  /**
   * Resolves true when woken (or a wake arrived since the last wait), false when timeoutMs passed or a signal
   * aborted. Several signals are watched directly rather than through AbortSignal.any: on Node 20 every
   * AbortSignal.any over a long-lived signal (the process's stopping signal) stays in that signal's dependants
   * for good, a leak of one entry per idle poll.
   */
  wait(queue: string, timeoutMs: number, signal?: AbortSignal | ReadonlyArray<AbortSignal | undefined>): Promise<boolean> {
    const signals = (Array.isArray(signal) ? signal : [signal]).filter((s): s is AbortSignal => s !== undefined);
    return new Promise((resolve) => {
      if (signals.some((s) => s.aborted)) return resolve(false);
      if (this.pending.delete(queue)) return resolve(true);
      let set = this.waiters.get(queue);
      if (!set) this.waiters.set(queue, (set = new Set()));
      const done = (woken: boolean) => {
        clearTimeout(timer);
        for (const s of signals) s.removeEventListener('abort', onAbort);
        set!.delete(wake);
        if (set!.size === 0 && this.waiters.get(queue) === set) this.waiters.delete(queue);
        resolve(woken);
      };
      const wake = () => done(true);
      const onAbort = () => done(false);
      const timer = setTimeout(() => done(false), Math.max(0, timeoutMs));
      set.add(wake);
      for (const s of signals) s.addEventListener('abort', onAbort, { once: true });
    });
  }
}
