// Many waiters watch one long-lived signal (the process's stopping signal). One listener per waiter's poll sleep
// made Node print MaxListenersExceededWarning past ten concurrent waiters, which operators read as a leak: here
// each signal gets ONE abort listener that calls whoever is watching it at that moment.

const watchers = new WeakMap<AbortSignal, Set<() => void>>();

/** Calls `fn` once when `signal` aborts (not if it already has: check `aborted` first); returns the unwatch. */
export function onAbort(signal: AbortSignal, fn: () => void): () => void {
  let set = watchers.get(signal);
  if (!set) {
    const current = new Set<() => void>();
    set = current;
    watchers.set(signal, current);
    signal.addEventListener(
      'abort',
      () => {
        watchers.delete(signal);
        for (const watcher of [...current]) watcher();
      },
      { once: true },
    );
  }
  const mine = set;
  mine.add(fn);
  return () => void mine.delete(fn);
}
