// DRAIN_TRIGGER: auto picks queue mode when the storage connection is configured; queue mode moves every timer to
// one 5-minute slot (they share a billed period) and ends a timer drain after one empty claim; timer mode keeps
// today's schedules; queue without storage, an unknown mode or a bad queue name are refused.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../shared/settings';

const base = { PGLITE_DATA_DIR: 'memory://' };

describe('DRAIN_TRIGGER', () => {
  it('auto: timer mode without storage, with today\'s schedules', () => {
    const c = loadConfig(base);
    expect(c.drainRequests.trigger).toBe('timer');
    expect(c.drain).toMatchObject({ schedule: '*/10 * * * * *', idleGraceMs: 8000 });
    expect(c.channel.sweepSchedule).toBe('*/5 * * * * *');
    expect(c.pruneSchedule).toBe('0 * * * * *');
  });

  it('auto: queue mode with AzureWebJobsStorage (a connection string or identity-based), every timer in one 5-minute slot', () => {
    for (const storage of [{ AzureWebJobsStorage: 'UseDevelopmentStorage=true' }, { AzureWebJobsStorage__accountName: 'acct' }]) {
      const c = loadConfig({ ...base, ...storage });
      expect(c.drainRequests).toMatchObject({ trigger: 'queue', queueName: 'asyncresponse-drain', idleGraceMs: 1000, fanOut: 2, maxPending: 32 });
      expect(c.drain).toMatchObject({ schedule: '0 */5 * * * *', idleGraceMs: 0 });
      expect([c.pruneSchedule, c.queueMetricsSchedule, c.channel.drainResponsesSchedule, c.channel.drainCallbacksSchedule, c.channel.sweepSchedule]).toEqual(Array(5).fill('0 */5 * * * *'));
    }
  });

  it('explicit settings win over the mode\'s defaults; timer mode can be forced with storage', () => {
    const c = loadConfig({ ...base, AzureWebJobsStorage: 'UseDevelopmentStorage=true', SWEEP_CHANNEL_SCHEDULE: '*/30 * * * * *', DRAIN_IDLE_GRACE_SECONDS: '2' });
    expect(c.channel.sweepSchedule).toBe('*/30 * * * * *');
    expect(c.drain.idleGraceMs).toBe(2000);
    expect(loadConfig({ ...base, AzureWebJobsStorage: 'UseDevelopmentStorage=true', DRAIN_TRIGGER: 'timer' }).drain.schedule).toBe('*/10 * * * * *');
  });

  it('refuses queue mode without storage, an unknown mode, a bad queue name and a fan-out out of range', () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig({ ...base, ...env });
        return [];
      } catch (err) {
        return (err as ConfigError).problems;
      }
    };
    expect(problems({ DRAIN_TRIGGER: 'queue' })).toEqual([expect.stringMatching(/DRAIN_TRIGGER=queue needs AzureWebJobsStorage/)]);
    expect(problems({ DRAIN_TRIGGER: 'sometimes' })).toEqual([expect.stringMatching(/must be auto, queue or timer/)]);
    expect(problems({ DRAIN_REQUEST_QUEUE: 'Bad--Name' })).toEqual([expect.stringMatching(/DRAIN_REQUEST_QUEUE/)]);
    expect(problems({ DRAIN_FANOUT: '9' })).toEqual([expect.stringMatching(/DRAIN_FANOUT/)]);
  });
});
