// Issue 18: with a storage queue nobody serves, the local host's queue trigger logged a warning per poll. Now at
// most one line a minute per queue, with the count, saying what to set when the queue cannot be reached.
import { describe, expect, it } from 'vitest';
import { pollFailureLog } from '../../local/host';

describe('queue-trigger poll failures in the local host log', () => {
  it('one line a minute, naming what to set when the storage queue cannot be reached', () => {
    const lines: string[] = [];
    let now = 0;
    const report = pollFailureLog('asyncresponse-drain', 'AzureWebJobsStorage', (l) => lines.push(l), () => now);
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:10001'), { code: 'ECONNREFUSED' });
    for (let i = 0; i < 20; i++) {
      report(refused);
      now += 1000;
    }
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^Polling queue 'asyncresponse-drain' failed \(1 so far; logged once a minute\): the storage queue cannot be reached \(connect ECONNREFUSED 127\.0\.0\.1:10001\): set AzureWebJobsStorage /);
    now += 60_000;
    report(new Error('403 forbidden'));
    expect(lines).toEqual([lines[0], "Polling queue 'asyncresponse-drain' failed (21 so far; logged once a minute): 403 forbidden"]);
  });
});
