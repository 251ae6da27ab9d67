/**
 * One signal aborted when any source aborts, without AbortSignal.any: on Node 20 every AbortSignal.any over a
 * long-lived signal (the process's stopping signal) stays in that signal's dependants for good. `dispose`
 * removes the listeners once the work that needed the signal is over.
 */
export function linkedSignal(sources: ReadonlyArray<AbortSignal | undefined>): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const live = sources.filter((s): s is AbortSignal => s !== undefined);
  const aborted = live.find((s) => s.aborted);
  if (aborted) {
    controller.abort(aborted.reason);
    return { signal: controller.signal, dispose: () => undefined };
  }
  const listeners = live.map((s) => {
    const onAbort = () => controller.abort(s.reason);
    s.addEventListener('abort', onAbort, { once: true });
    return () => s.removeEventListener('abort', onAbort);
  });
  return { signal: controller.signal, dispose: () => listeners.forEach((remove) => remove()) };
}
