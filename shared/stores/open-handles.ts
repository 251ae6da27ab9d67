// Counts open database clients so tests can assert that none is left open (a leaked pool keeps a process
// alive and, on SQL Server, holds connections other instances need).

const open = new Map<number, string>();
let next = 0;

export function trackOpen(what: string): () => void {
  const id = next++;
  open.set(id, what);
  return () => {
    open.delete(id);
  };
}

export function openHandles(): string[] {
  return [...open.values()];
}
