// Time as the flows layer sees it. Instants come from the database clock (the store's now(), sampled once per
// execution and carried forward by the process clock); waits use the process's timers. Tests substitute a
// virtual clock (test/support/virtual-clock.ts) that drives both.

export interface FlowClock {
  /** Epoch milliseconds. */
  now(): number;
  /** Resolves after ms (at once for ms <= 0); rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: FlowClock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      if (ms <= 0) return resolve();
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
      function done() {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }
      function onAbort() {
        clearTimeout(timer);
        reject(signal!.reason);
      }
    }),
};
