// The metric names in infra/modules/observability.bicep: the list at the top of the module is the contract with
// the telemetry code, and every query in the workbook and the alerts may only use names from that list (a typo
// in KQL gives an empty chart or an alert that never fires, silently).

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { blankCommentsAndStrings, closingBracket, listedMetricNames, OBSERVABILITY_MODULE } from '../support/bicep';

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
    expect(src).toMatch(/\| summarize LastGauge = max\(timestamp\)\n\| where isnotnull\(LastGauge\)\n/); // the metrics-stopped rule
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

/** The body of `resource <symbol> '<type>@…' = {…}` (original text, comments included). */
function resourceBody(symbol: string): string {
  const blanked = blankCommentsAndStrings(src);
  const m = new RegExp(`^resource\\s+${symbol}\\s+'[^']+'\\s*=\\s*\\{`, 'm').exec(src);
  if (!m) throw new Error(`no resource ${symbol}`);
  const open = m.index + m[0].length - 1;
  return src.slice(open, closingBracket(blanked, open) + 1);
}
const prop = (body: string, key: string) => new RegExp(`^\\s*${key}:\\s*(.+?)\\s*$`, 'm').exec(body)?.[1];

describe('infra: workbook and the metrics-stopped alert (review findings C3, C4)', () => {
  it('gives the workbook a lower-case sourceId (the workbooks service compares it case-sensitively)', () => {
    expect(prop(resourceBody('workbook'), 'sourceId')).toBe('toLower(appInsightsId)');
  });

  it('"metrics stopped" fires only after gauges arrived and then stopped, not on a fresh deployment', () => {
    const rule = resourceBody('metricsStoppedAlert');
    const query = /^var metricsStoppedAlertQuery = '''\n([\s\S]*?)'''/m.exec(src)![1]!;
    // a fresh deployment has no gauge: the isnotnull filter leaves no row, and a log alert without rows stays quiet
    // (the old rule counted rows, so its "0 gauges" row fired on every first deployment)
    expect(query).toMatch(/\| summarize LastGauge = max\(timestamp\)\n\| where isnotnull\(LastGauge\)\n/);
    expect(query).not.toMatch(/count\(\)/);
    const measure = prop(rule, 'metricMeasureColumn')!.replace(/'/g, '');
    expect(query).toMatch(new RegExp(`\\| project ${measure} = datetime_diff\\('minute', now\\(\\), LastGauge\\)`));
    expect(prop(rule, 'operator')).toBe("'GreaterThan'");
    // queue mode sends the gauges every 5 minutes: alert after 3 missed ones, not after one late ingestion
    expect(Number(prop(rule, 'threshold'))).toBeGreaterThanOrEqual(15);
    // the query must see further back than the silence it reports, or "stopped" looks like "never started"
    expect(prop(rule, 'overrideQueryTimeRange')).toBe("'P2D'");
    expect(prop(rule, 'windowSize')).toBe("'PT15M'");
  });
});
