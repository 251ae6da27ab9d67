// Pause and resume from the operator dashboard in a real browser (Debian's chromium through playwright-core): the
// queue row shows a Pause button; clicking it asks for confirmation, then the row shows "paused", the API says so
// and a published job waits; Resume (confirmed) lets it run. Skips (with the reason) when chromium is absent,
// unless REQUIRE_BROWSER=1.
import { existsSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { getRuntime } from '../../shared/runtime';
import { postJson, startApp, type RunningApp, TIMER_DRAIN_EVERY_SECOND } from './app-harness';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const missing = existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is absent (apt-get install -y chromium)`;
if (missing && process.env.REQUIRE_BROWSER === '1') throw new Error(`REQUIRE_BROWSER=1 but ${missing}`);
if (missing) console.warn(`[dashboard pause browser test] skipped: ${missing}`);
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

let app: RunningApp;
let browser: Browser | undefined;

beforeAll(async () => {
  if (missing) return;
  app = await startApp({
    PGLITE_DATA_DIR: 'memory://',
    QUEUES: 'worker,limited',
    QUEUE__limited__CONCURRENCY_LIMIT: '4',
    QUEUE__limited__RATE_LIMIT_PER_SECOND: '2.5',
    ...TIMER_DRAIN_EVERY_SECOND,
    LOG_LEVEL: 'warn',
  });
  const { chromium } = await import('playwright-core');
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

const queue = async () => (await (await app.api('queues/worker')).json()) as { ready: number; paused: boolean };

describe.skipIf(!!missing)('pause and resume from the dashboard (chromium)', () => {
  it("the Limits column shows a queue's limits across instances, a dash without", async () => {
    const page = await browser!.newPage();
    await page.goto(`${app.url}/api/dashboard`);
    const limits = (q: string) => page.locator(`#queues tr[data-queue="${q}"] td[data-field="limits"]`);
    await expect.poll(() => limits('limited').textContent(), { timeout: 15_000 }).toBe('≤ 4 running · ≤ 2.5/s');
    expect(await limits('worker').textContent()).toBe('—');
    await page.close();
  });

  it('Pause asks first, then every claim stops and the row says paused; Resume lets the waiting job run', async () => {
    const page = await browser!.newPage();
    await page.goto(`${app.url}/api/dashboard`);
    const row = page.locator('#queues tr[data-queue="worker"]');
    await expect.poll(() => row.locator('button[data-action="pause"]').count(), { timeout: 15_000 }).toBe(1);

    // cancelling the confirmation changes nothing
    await row.locator('button[data-action="pause"]').click();
    await expect.poll(() => page.locator('#confirm').isVisible()).toBe(true);
    expect(await page.locator('#confirm-text').textContent()).toMatch(/stops claiming jobs from 'worker'/);
    await page.click('#confirm-cancel');
    expect((await queue()).paused).toBe(false);

    await row.locator('button[data-action="pause"]').click();
    await page.click('#confirm-ok');
    await expect.poll(() => page.locator('#notice').textContent(), { timeout: 10_000 }).toBe("Paused 'worker'.");
    await expect.poll(() => row.locator('[data-field="paused"]').textContent(), { timeout: 10_000 }).toBe('paused');
    expect((await queue()).paused).toBe(true);
    expect((await app.api('queues/worker/messages', postJson({ payload: { n: 1 } }))).status).toBe(201);
    await page.waitForTimeout(2000); // two timer drains
    expect((await queue()).ready).toBe(1);

    await row.locator('button[data-action="resume"]').click();
    expect(await page.locator('#confirm-text').textContent()).toMatch(/claims from 'worker' again/);
    await page.click('#confirm-ok');
    await expect.poll(() => page.locator('#notice').textContent(), { timeout: 10_000 }).toBe("Resumed 'worker'.");
    await expect.poll(async () => (await queue()).ready, { timeout: 15_000 }).toBe(0);
    await expect.poll(() => row.locator('[data-field="paused"]').count(), { timeout: 10_000 }).toBe(0);
    await page.close();
  });

  it('a queue with rows but no route shows as "no route", with no Pause (issue 27: an outbox insert was invisible)', async () => {
    const rt = await getRuntime();
    await rt.store.publish([{ id: randomUUID(), queue: 'orders-outbox', payloadJson: '{"orderId":42}', headers: {}, delayMs: 0 }]);
    const page = await browser!.newPage();
    await page.goto(`${app.url}/api/dashboard`);
    const row = page.locator('#queues tr[data-queue="orders-outbox"]');
    await expect.poll(() => row.locator('[data-field="unrouted"]').textContent(), { timeout: 15_000 }).toBe('no route');
    expect(await row.locator('td[data-field="ready"]').textContent()).toBe('1');
    expect(await row.locator('button[data-action="pause"]').count()).toBe(0);
    await page.close();
  });
});
