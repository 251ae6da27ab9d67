import { describe, expect, it } from 'vitest';
import { silentLogger, type Logger } from '../../shared/log';
import { drainPrune } from '../../shared/transport/prune';

const logs = () => {
  const lines: string[] = [];
  const logger: Logger = { debug: () => {}, info: () => {}, warn: (m) => void lines.push(`warn ${m}`), error: (m) => void lines.push(`error ${m}`) };
  return { lines, logger };
};

describe('bounded prune drain', () => {
  it('keeps deleting full batches until one comes back short', async () => {
    const answers = [1000, 1000, 1000, 7];
    let calls = 0;
    const r = await drainPrune(async () => answers[calls++]!, silentLogger, 'prune');
    expect(calls).toBe(4);
    expect(r).toEqual({ deleted: 3007, batches: 4, cutShort: false });
  });

  it('stops at its budget after the first batch, and warns', async () => {
    let t = 0;
    const { lines, logger } = logs();
    const r = await drainPrune(
      async () => {
        t += 1500;
        return 1000;
      },
      logger,
      'prune',
      2000,
      () => t,
    );
    expect(r).toEqual({ deleted: 2000, batches: 2, cutShort: true });
    expect(lines.some((l) => l.startsWith('warn') && l.includes('budget'))).toBe(true);
  });

  it('swallows every failure, even when its own log line throws', async () => {
    const throwing: Logger = { debug: () => {}, info: () => {}, warn: () => { throw new Error('log'); }, error: () => { throw new Error('log'); } };
    const r = await drainPrune(async () => { throw new Error('db down'); }, throwing, 'prune');
    expect(r).toEqual({ deleted: 0, batches: 0, cutShort: true });
  });
});
