// Whether the client of an HTTP request is still there to take the answer. Azure's Functions host gives a
// function no such signal, so there the answer to a client that went away is simply lost; our local host knows
// when the socket closes and registers a signal here, which the long-poll GET uses so that a waiter whose client
// gave up stops waiting (and leaves its subscriber row) instead of taking a response nobody will read.

const signals = new WeakMap<object, AbortSignal>();

/** For the host that serves `request`: `signal` aborts when its client goes away before the answer is written. */
export function registerClientGone(request: object, signal: AbortSignal): void {
  signals.set(request, signal);
}

/** The request's client-gone signal, when its host gives one. */
export function clientGoneSignal(request: object): AbortSignal | undefined {
  return signals.get(request);
}
