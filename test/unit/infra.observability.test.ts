// The metric names in infra/modules/observability.bicep: the list at the top of the module is the contract with
// the telemetry code, and every query in the workbook and the alerts may only use names from that list (a typo
// in KQL gives an empty chart or an alert that never fires, silently).

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { listedMetricNames, OBSERVABILITY_MODULE } from '../support/bicep';

const src = readFileSync(OBSERVABILITY_MODULE, 'utf8');

const EXPECTED = [
  'asyncresponse.jobs.published',
  'asyncresponse.jobs.claimed',
  'asyncresponse.jobs.completed',
  'asyncresponse.jobs.failed',
  'asyncresponse.jobs.deadlettered',
  'asyncresponse.jobs.redelivered',
  'asyncresponse.queue.ready',
  'asyncresponse.queue.delayed',
  'asyncresponse.queue.leased',
  'asyncresponse.queue.deadlettered',
  'asyncresponse.queue.oldest_ready_age_seconds',
  'asyncresponse.drain.duration_ms',
  'asyncresponse.channel.sweep.duration_ms',
  'asyncresponse.prune.deleted',
];

/** Names listed in the header comment: lines like `//   asyncresponse.x.y   kind   dims`. */
const listedNames = () => listedMetricNames(src);

describe('infra: observability metric names', () => {
  it('lists exactly the metrics the telemetry emits, once each', () => {
    const listed = listedNames();
    expect(listed).toEqual(EXPECTED);
  });

  it('queries only listed metrics (prefixes in replace_string must match a listed name)', () => {
    const listed = new Set(listedNames());
    const quoted = [...src.matchAll(/"(asyncresponse\.[a-z_.]*)"/g)].map((m) => m[1]!);
    expect(quoted.length).toBeGreaterThan(10);
    for (const name of quoted) {
      if (name.endsWith('.')) expect([...listed].some((l) => l.startsWith(name)), `prefix ${name}`).toBe(true);
      else expect(listed.has(name), `metric ${name}`).toBe(true);
    }
  });

  it('has the five alerts: dead letters, oldest ready age, metrics stopped, failed drains, drain error traces', () => {
    expect(src).toMatch(/name == "asyncresponse\.jobs\.deadlettered"/);
    expect(src).toMatch(/name == "asyncresponse\.queue\.oldest_ready_age_seconds"/);
    expect(src).toMatch(/\| summarize Rows = count\(\)\n'''/); // the no-data rule: no "by", so 0 rows count as 0
    expect(src).toMatch(/requests\n\| where name startswith "drain-" and success == false/);
    expect(src).toMatch(/traces\n\| where operation_Name startswith "drain-" and severityLevel >= 3/);
    expect([...src.matchAll(/Microsoft\.Insights\/scheduledQueryRules@/g)].length).toBe(5);
  });

  it('reads only dimension keys the telemetry sets', async () => {
    const { DIM } = await import('../../shared/telemetry/metric-names');
    const keys = new Set(Object.values(DIM) as string[]);
    const used = [...src.matchAll(/customDimensions\.([A-Za-z_]+)/g)].map((m) => m[1]!);
    expect(used.length).toBeGreaterThan(3);
    for (const key of used) expect(keys, `customDimensions.${key}`).toContain(key);
  });
});
