// The dashboard's job search in a real browser (Debian's chromium through playwright-core): a job id finds the job
// in its state (delayed, then completed once drained on a queue that keeps history); a correlation id lists the
// completed jobs of the history, newest first, with More for the next page; a markup correlation id shows as text;
// an unknown id says so. Skips (with the reason) when chromium is absent, unless REQUIRE_BROWSER=1.
import { existsSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/messages';
import { postJson, startApp, type RunningApp, TIMER_DRAIN_EVERY_SECOND } from './app-harness';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const missing = existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is absent (apt-get install -y chromium)`;
if (missing && process.env.REQUIRE_BROWSER === '1') throw new Error(`REQUIRE_BROWSER=1 but ${missing}`);
if (missing) console.warn(`[dashboard job-search browser test] skipped: ${missing}`);
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const MARKUP = '<img src=x onerror=window.__xss=1>';

let app: RunningApp;
let browser: Browser | undefined;

beforeAll(async () => {
  if (missing) return;
  app = await startApp({ PGLITE_DATA_DIR: 'memory://', QUEUES: 'worker', JOB_HISTORY_RETENTION_DAYS: '1', ...TIMER_DRAIN_EVERY_SECOND, LOG_LEVEL: 'warn' });
  const { chromium } = await import('playwright-core');
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

const publish = async (body: Record<string, unknown>) => ((await (await app.api('queues/worker/messages', postJson(body))).json()) as { id: string }).id;
const state = async (id: string) => ((await (await app.api(`jobs/${id}`)).json()) as { state: string }).state;

describe.skipIf(!!missing)('job search on the dashboard (chromium)', () => {
  it('finds a job by id in its state, lists completed jobs by correlation id a page at a time, and shows markup as text', async () => {
    const later = await publish({ payload: { n: 0 }, delaySeconds: 600 });
    const ids: string[] = [];
    for (let i = 0; i < 22; i++) ids.push(await publish({ payload: { i }, correlationId: MARKUP }));
    await eventually(async () => (await state(ids.at(-1)!)) === 'completed' && (await state(ids[0]!)) === 'completed', 'the jobs completed', 20_000);

    const page = await browser!.newPage();
    await page.goto(`${app.url}/api/dashboard`);
    await expect.poll(() => page.locator('#js-queue option[value="worker"]').count(), { timeout: 15_000 }).toBe(1);

    await page.fill('#js-text', later.toUpperCase());
    await page.click('#js-form button[type="submit"]');
    const row = page.locator(`#jobs tr[data-id="${later}"]`);
    await expect.poll(() => row.locator('[data-field="state"]').textContent(), { timeout: 10_000 }).toBe('delayed');

    await page.fill('#js-text', ids[0]!);
    await page.click('#js-form button[type="submit"]');
    await expect.poll(() => page.locator(`#jobs tr[data-id="${ids[0]}"] [data-field="state"]`).textContent(), { timeout: 10_000 }).toBe('completed');

    await page.fill('#js-text', MARKUP);
    await page.selectOption('#js-queue', 'worker');
    await page.click('#js-form button[type="submit"]');
    await expect.poll(() => page.locator('#jobs tbody tr').count(), { timeout: 10_000 }).toBe(20);
    expect(await page.locator('#js-more').isVisible()).toBe(true);
    await page.click('#js-more');
    await expect.poll(() => page.locator('#jobs tbody tr').count(), { timeout: 10_000 }).toBe(22);
    expect(await page.locator('#js-more').isVisible()).toBe(false);
    const shown = await page.locator('#jobs tbody tr').evaluateAll((trs) => trs.map((tr) => (tr as unknown as { dataset: { id: string } }).dataset.id));
    expect([...shown].sort()).toEqual([...ids].sort());
    expect(await page.locator('#jobs code').first().getAttribute('title')).toBe(`correlation id ${MARKUP}`);
    expect(await page.evaluate(() => (globalThis as { __xss?: number }).__xss)).toBeUndefined();

    await page.fill('#js-text', '00000000-0000-4000-8000-000000000000');
    await page.selectOption('#js-queue', '');
    await page.click('#js-form button[type="submit"]');
    await expect.poll(() => page.locator('#js-status').textContent(), { timeout: 10_000 }).toMatch(/^No job with this id/);
    expect(await page.locator('#js-results').isHidden()).toBe(true);
    await page.close();
  });
});
