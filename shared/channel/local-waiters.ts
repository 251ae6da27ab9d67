// Waiters (long-poll GETs) running in this process, by correlation id: a same-process publish wakes them at
// once instead of after a poll interval, and a publisher learns at once that one of them took its response.

type Wake = () => void;

export class LocalWaiters {
  private readonly byCorrelation = new Map<string, Set<Wake>>();
  private readonly deliveredListeners = new Map<string, Set<() => void>>();
  private readonly observers = new Map<string, Set<Wake>>();

  add(correlationId: string, wake: Wake): () => void {
    let set = this.byCorrelation.get(correlationId);
    if (!set) this.byCorrelation.set(correlationId, (set = new Set()));
    set.add(wake);
    return () => {
      set!.delete(wake);
      if (set!.size === 0 && this.byCorrelation.get(correlationId) === set) this.byCorrelation.delete(correlationId);
    };
  }

  has(correlationId: string): boolean {
    return (this.byCorrelation.get(correlationId)?.size ?? 0) > 0;
  }

  notify(correlationId: string): void {
    for (const wake of [...(this.byCorrelation.get(correlationId) ?? [])]) wake();
    for (const wake of [...(this.observers.get(correlationId) ?? [])]) wake();
  }

  /** Woken like a waiter by a publish of the id (this process's, or NOTIFY), but not a waiter: `has` ignores it. */
  observe(correlationId: string, wake: Wake): () => void {
    let set = this.observers.get(correlationId);
    if (!set) this.observers.set(correlationId, (set = new Set()));
    set.add(wake);
    return () => {
      set!.delete(wake);
      if (set!.size === 0 && this.observers.get(correlationId) === set) this.observers.delete(correlationId);
    };
  }

  /** A local waiter claimed delivery of message `id`. */
  delivered(id: string): void {
    for (const f of [...(this.deliveredListeners.get(id) ?? [])]) f();
  }

  onDelivered(id: string, listener: () => void): () => void {
    let set = this.deliveredListeners.get(id);
    if (!set) this.deliveredListeners.set(id, (set = new Set()));
    set.add(listener);
    return () => {
      set!.delete(listener);
      if (set!.size === 0) this.deliveredListeners.delete(id);
    };
  }
}
