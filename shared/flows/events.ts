/** In-process notice that a run ended, so a long-poll read here answers at once (others poll the store). */
export class FlowEvents {
  private readonly listeners = new Map<string, Set<() => void>>();

  onEnded(flowId: string, listener: () => void): () => void {
    let set = this.listeners.get(flowId);
    if (!set) this.listeners.set(flowId, (set = new Set()));
    set.add(listener);
    return () => {
      set!.delete(listener);
      if (set!.size === 0 && this.listeners.get(flowId) === set) this.listeners.delete(flowId);
    };
  }

  ended(flowId: string): void {
    for (const f of [...(this.listeners.get(flowId) ?? [])]) f();
  }
}
