// The operator dashboard in a real browser (Debian's chromium driven by playwright-core, no browser download):
// the local host serves the real function table; the test publishes jobs and failing jobs, opens the page, types
// the function key, checks the counts it shows, requeues a dead letter by clicking, and checks the queue through
// the API. A topic with two subscriptions (one named with markup) shows with both subscriptions' counts, and a
// subscription row selects its queue's dead letters. A payload, a reason and a name holding markup must show as text. Skips (with the reason) when chromium is
// absent, unless REQUIRE_BROWSER=1 (set by .ci/run), which makes that a failure.
// Until the first data arrive the page says it is loading, and a failed first load says why in the page (a 401, a
// 503 while the store is unreachable). A queue's waiting jobs (ready or delayed, oldest or newest first) list what
// the API lists, a job published while the page is open after a refresh, with the same loading and error lines.
// Schedules (made through the API) list with target, cron and zone, last and next run; one pauses by clicking.
// DASHBOARD_SCREENSHOT_DIR=docs saves docs/dashboard.md's screenshots (dashboard.png, dashboard-narrow.png).
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, sleep } from '../support/messages';
import { postJson, startApp, type RunningApp } from './app-harness';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const missing = existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is absent (apt-get install -y chromium)`;
if (missing && process.env.REQUIRE_BROWSER === '1') throw new Error(`REQUIRE_BROWSER=1 but ${missing}`);
if (missing) console.warn(`[dashboard browser test] skipped: ${missing}`);

// The network is closed: nothing that phones home.
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const KEY = 'dashboard-test-key-7f3a';
const keyed = { 'x-functions-key': KEY };
const XSS_NOTE = '<script>window.__xss = 1</script><img src=x onerror=window.__xss=2>';
// topic and subscription names follow the queue name rules: markup is allowed (only ':' and control characters are not)
const MARKUP_SUB = '<b>audit</b>';
// schedule names follow them too ('/' aside, which a route parameter would not carry)
const MARKUP_SCHEDULE = '<img src=x onerror=window.__xss=3>';
const BILLING_QUEUE = 'orders:billing';
const MARKUP_QUEUE = `orders:${MARKUP_SUB}`;
/** What page.evaluate sees (this project's TypeScript has no DOM library). */
type BrowserGlobals = { __xss?: number; sessionStorage: { getItem(key: string): string | null }; document: { documentElement: { scrollWidth: number } } };

let failing = true;
const received: Array<{ id: string; attempt: number; status: number }> = [];
let target: Server;
let app: RunningApp;
let browser: Browser | undefined;

beforeAll(async () => {
  if (missing) return;
  // The worker forwards each job here: jobs with `fail: true` fail while `failing` is set, with markup in the answer.
  target = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.url !== '/jobs') return void res.writeHead(204).end(); // callbacks: not used here
      const job = JSON.parse(body) as { id: string; attempt: number; payload: { fail?: boolean } };
      const status = failing && job.payload.fail ? 500 : 200;
      received.push({ id: job.id, attempt: job.attempt, status });
      res.writeHead(status, { 'content-type': 'text/html' }).end(status === 500 ? '<b>boom</b> upstream refused the order' : 'ok');
    });
  });
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  const port = (target.address() as AddressInfo).port;
  app = await startApp(
    {
      PGLITE_DATA_DIR: 'memory://',
      QUEUES: 'worker',
      TOPICS: 'orders',
      TOPIC__orders__SUBSCRIPTIONS: `billing,${MARKUP_SUB}`,
      WORKER_FORWARD_URL: `http://127.0.0.1:${port}/jobs`,
      MAX_DELIVERY_ATTEMPTS: '1',
      DRAIN_WORKER_SCHEDULE: '*/1 * * * * *',
      DRAIN_BUDGET_SECONDS: '2',
      DRAIN_IDLE_GRACE_SECONDS: '0.5',
      // responses published to the ingress queue stay there (ready) for the whole test
      DRAIN_RESPONSES_SCHEDULE: '0 0 0 1 1 *',
      DELIVERY_CONFIRMATION_TIMEOUT_MS: '100',
      CALLBACK_SIGNING_SECRET: 'dashboard-test-signing-secret',
      CALLBACK_ALLOWED_HOSTS: `127.0.0.1:${port}`,
      LOG_LEVEL: 'warn',
    },
    { functionKey: KEY },
  );
  const { chromium } = await import('playwright-core');
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await new Promise((r) => (target ? target.close(r) : r(undefined)));
});

type DeadLetter = { id: string; payload: { note?: string } };
const deadLetters = async (queue = 'worker') =>
  ((await (await app.api(`queues/${encodeURIComponent(queue)}/deadletters`, { headers: keyed })).json()) as { items: DeadLetter[] }).items;
const publish = (queue: string, body: unknown) => app.api(`queues/${queue}/messages`, postJson(body, keyed));

/** The text of one count in the queue table. */
const queueCell = (page: Page, queue: string, field: string) => page.locator(`#queues tr[data-queue="${queue}"] td[data-field="${field}"]`);
/** A subscription's row in the topics table (CSS string escapes for the queue name). */
const subscriptionRow = (page: Page, queue: string) => page.locator(`#topics tr[data-queue="${queue.replace(/["\\]/g, '\\$&')}"]`);

describe.skipIf(!!missing)('operator dashboard in chromium', () => {
  it('shows the counts, keeps markup as text, requeues a dead letter by clicking; the key stays out of URLs', async () => {
    for (let i = 0; i < 3; i++) expect((await publish('worker', { payload: { report: i }, delaySeconds: 3600 })).status).toBe(201);
    expect((await publish('response', [{ payload: { raw: 1 } }, { payload: { raw: 2 } }])).status).toBe(201);
    const poisoned = (await (await publish('worker', { payload: { fail: true, note: XSS_NOTE } })).json()) as { id: string };
    const other = (await (await publish('worker', { payload: { fail: true, orderId: 1042 } })).json()) as { id: string };
    expect((await app.api('responses', postJson({ correlationId: 'dash-stored', payload: { ok: true } }, keyed))).status).toBe(202);
    const port = (target.address() as AddressInfo).port;
    expect((await app.api('waiters', postJson({ correlationId: 'dash-registered', callbackUrl: `http://127.0.0.1:${port}/cb` }, keyed))).status).toBe(201);
    // the topic: two delayed copies and one failing copy per subscription
    const topicBatch = [{ payload: { t: 1 }, delaySeconds: 3600 }, { payload: { t: 2 }, delaySeconds: 3600 }, { payload: { fail: true, t: 3 } }];
    const fanned = await app.api('topics/orders/messages', postJson(topicBatch, keyed));
    expect(fanned.status).toBe(201);
    expect(((await fanned.json()) as { items: Array<{ subscriptions: number }> }).items.map((i) => i.subscriptions)).toEqual([2, 2, 2]);
    await eventually(async () => ((await deadLetters()).length === 2 ? true : undefined), 'both failing jobs to be dead-lettered', 20_000);
    for (const queue of [BILLING_QUEUE, MARKUP_QUEUE]) {
      await eventually(async () => ((await deadLetters(queue)).length === 1 ? true : undefined), `the failing copy on ${queue} to be dead-lettered`, 20_000);
    }

    const page = await browser!.newPage({ viewport: { width: 1280, height: 900 } });
    const requests: Request[] = [];
    const problems: string[] = [];
    page.on('request', (r) => requests.push(r));
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
    });

    // The first data are slow to come (held back here): the page says it is loading, not an empty table.
    let releaseQueues: () => void = () => undefined;
    const queuesHeld = new Promise<void>((r) => (releaseQueues = r));
    // every data call of the first refresh (the flows list too: its 401 would otherwise say why before the others)
    const held: Array<string | RegExp> = ['**/api/queues', '**/api/channel', '**/api/topics', /\/api\/flows\?/];
    for (const pattern of held) {
      await page.route(pattern, async (route) => {
        await queuesHeld;
        await route.continue();
      });
    }
    const opened = await page.goto(`${app.url}/api/dashboard`);
    expect(opened!.status()).toBe(200);
    await expect.poll(() => page.locator('#loading').isVisible(), { timeout: 10_000 }).toBe(true);
    expect(await page.locator('#loading').getAttribute('data-state')).toBe('loading');
    expect(await page.locator('#loading').textContent()).toMatch(/^Loading queues/);
    releaseQueues();
    // the page's own files need no key; the data calls do, so the page asks for it, and the loading line says why
    // nothing is shown (the 401, in the page, not only in a notice that fades)
    await expect.poll(() => page.locator('#key-form').isVisible(), { timeout: 10_000 }).toBe(true);
    await expect.poll(() => page.locator('#loading').getAttribute('data-state'), { timeout: 10_000 }).toBe('error');
    expect(await page.locator('#loading').textContent()).toBe('Not loaded (401): This app needs a function key. Enter it above.');
    // said once, in the loading line; the sections that load after the counts do not claim to be loading (issue 27)
    expect(await page.locator('#notice').isVisible()).toBe(false);
    expect(await page.locator('#wj-status').isVisible()).toBe(false);
    expect(await page.locator('#sc-status').isVisible()).toBe(false);
    for (const pattern of held) await page.unroute(pattern);
    await page.fill('#key-input', KEY);
    await page.click('#key-form button[type="submit"]');

    await expect.poll(() => queueCell(page, 'worker', 'deadLettered').textContent(), { timeout: 15_000 }).toBe('2');
    // the line goes once the whole refresh is through (the dead letters are read after the counts are shown)
    await expect.poll(() => page.locator('#loading').isVisible(), { timeout: 10_000 }).toBe(false);
    expect(await queueCell(page, 'worker', 'delayed').textContent()).toBe('3');
    expect(await queueCell(page, 'worker', 'ready').textContent()).toBe('0');
    expect(await queueCell(page, 'worker', 'leased').textContent()).toBe('0');
    expect(await queueCell(page, 'response', 'ready').textContent()).toBe('2');
    expect(await queueCell(page, 'callbacks', 'deadLettered').textContent()).toBe('0');
    expect(await page.locator('#queues tr[data-queue="worker"] svg.spark polyline').count()).toBe(1);
    const tile = (field: string) => page.locator(`#channel [data-field="${field}"] .tile-value`).textContent();
    // delivered responses count too: the tile says so rather than reading as a backlog (issue 27)
    expect(await page.locator('#channel [data-field="storedResponses"] .tile-label').textContent()).toBe('Responses kept');
    expect(await page.locator('#channel [data-field="storedResponses"] .tile-hint').textContent()).toBe('delivered or not, until their retention ends');
    // the app's own queues offer no Pause (a paused callbacks or flows queue stops them for everyone); worker does
    for (const internal of ['response', 'callbacks', 'flows']) {
      expect(await page.locator(`#queues tr[data-queue="${internal}"] button[data-action="pause"]`).count(), internal).toBe(0);
      expect(await page.locator(`#queues tr[data-queue="${internal}"] [data-field="internal"]`).textContent(), internal).toBe('internal');
    }
    expect(await page.locator('#queues tr[data-queue="worker"] button[data-action="pause"]').count()).toBe(1);
    expect([await tile('storedResponses'), await tile('liveWaiters'), await tile('registrations'), await tile('callbacksQueued'), await tile('callbacksDeadLettered')]).toEqual(['1', '0', '1', '0', '0']);
    await expect.poll(() => page.locator('#health').textContent()).toBe('Healthy · pglite');
    expect(await page.locator('#key-form').isVisible()).toBe(false);

    // dead letters of worker (the queue with dead letters is selected by itself): markup shows as text
    const row = page.locator(`#deadletters tr[data-id="${poisoned.id}"]`);
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.locator('.payload summary code').textContent()).toContain(XSS_NOTE);
    expect(await row.locator('.reason').textContent()).toMatch(/<b>boom<\/b>/);
    expect(await row.locator('td[data-label="Attempts"]').textContent()).toBe('1'); // MAX_DELIVERY_ATTEMPTS=1
    expect(await page.locator('#deadletters script, #deadletters img, #deadletters b').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as unknown as BrowserGlobals).__xss)).toBeUndefined();

    // topics: the topic, then each subscription with its queue's counts; the markup name shows as text
    expect(await page.locator('#topics-section').isVisible()).toBe(true);
    expect(await page.locator('#topics tr.topic').allTextContents()).toEqual(['orders2 subscriptions']);
    for (const queue of [BILLING_QUEUE, MARKUP_QUEUE]) {
      const sub = subscriptionRow(page, queue);
      await expect.poll(() => sub.count()).toBe(1);
      const counts = await Promise.all(['ready', 'delayed', 'leased', 'deadLettered'].map((f) => sub.locator(`td[data-field="${f}"]`).textContent()));
      expect(counts, queue).toEqual(['0', '2', '0', '1']);
      expect(await sub.locator('td[data-field="oldestReady"]').textContent()).toBe('—');
      expect(await sub.locator('td.queue-cell button').textContent()).toBe(queue);
    }
    expect(await subscriptionRow(page, BILLING_QUEUE).locator('td.name').textContent()).toBe('billing');
    expect(await subscriptionRow(page, MARKUP_QUEUE).locator('td.name').textContent()).toBe(MARKUP_SUB);
    expect(await page.locator('#topics b, #queues b, #dl-queue b').count()).toBe(0);
    expect(await queueCell(page, MARKUP_QUEUE, 'deadLettered').textContent()).toBe('1');

    const shots = process.env.DASHBOARD_SCREENSHOT_DIR;
    if (shots) {
      // a few more samples with some movement, so the screenshots' charts draw a line (response jobs stay ready)
      for (const n of [3, 1, 4, 2]) {
        await publish('response', Array.from({ length: n }, (_, i) => ({ payload: { raw: i } })));
        await page.click('#refresh');
        await page.waitForTimeout(1500);
      }
      await page.locator(`#deadletters tr[data-id="${other.id}"] summary`).click();
      await page.screenshot({ path: join(shots, 'dashboard.png'), fullPage: true });
      await page.locator(`#deadletters tr[data-id="${other.id}"] summary`).click();
    }

    // requeue the poisoned one by clicking, once the target accepts it
    failing = false;
    await row.locator('button[data-action="requeue"]').click();
    await expect.poll(() => page.locator('#confirm').isVisible()).toBe(true);
    expect(await page.locator('#confirm-text').textContent()).toContain(poisoned.id);
    await page.click('#confirm-ok');
    await expect.poll(() => page.locator('#notice').textContent(), { timeout: 10_000 }).toBe('Requeued 1 dead letter.');

    // through the API: it left the dead letters and ran again on worker; the other one is untouched
    await eventually(async () => (received.some((r) => r.id === poisoned.id && r.status === 200) ? true : undefined), 'the requeued job to run', 15_000);
    expect((await deadLetters()).map((d) => d.id)).toEqual([other.id]);
    const stats = (await (await app.api('queues/worker', { headers: keyed })).json()) as Record<string, number>;
    expect(stats).toMatchObject({ ready: 0, leased: 0, delayed: 3, deadLettered: 1 });
    await expect.poll(() => queueCell(page, 'worker', 'deadLettered').textContent(), { timeout: 15_000 }).toBe('1');

    // a subscription row selects its queue's dead letters, like a queue row
    await subscriptionRow(page, MARKUP_QUEUE).locator('td.queue-cell button').click();
    expect(await page.locator('#dl-queue').inputValue()).toBe(MARKUP_QUEUE);
    const [copy] = await deadLetters(MARKUP_QUEUE);
    await expect.poll(() => page.locator(`#deadletters tr[data-id="${copy!.id}"]`).count(), { timeout: 10_000 }).toBe(1);
    expect(await page.locator('#deadletters tbody tr').count()).toBe(1);
    expect(await page.locator(`#deadletters tr[data-id="${copy!.id}"] td[data-label="Source"]`).textContent()).toBe(MARKUP_QUEUE);
    expect(await subscriptionRow(page, MARKUP_QUEUE).getAttribute('class')).toBe('selected');
    expect(await page.locator('#topics tr.selected, #queues tr.selected').count()).toBe(2); // its queue row too
    expect(await page.locator('#deadletters b').count()).toBe(0);

    // the key: in session storage, sent as a header on every data call, never in a URL
    expect(await page.evaluate(() => (globalThis as unknown as BrowserGlobals).sessionStorage.getItem('asyncresponse.functionKey'))).toBe(KEY);
    expect(requests.filter((r) => r.url().includes(KEY))).toEqual([]);
    const dataCalls = requests.filter((r) => /\/api\/(queues|channel|topics)/.test(r.url()));
    expect(dataCalls.length).toBeGreaterThan(3);
    const keyedAfterTyping = dataCalls.filter((r) => r.headers()['x-functions-key'] === KEY).map((r) => `${r.method()} ${new URL(r.url()).pathname}`);
    expect(keyedAfterTyping).toContain(`POST /api/queues/worker/deadletters/${poisoned.id}/requeue`);
    expect(keyedAfterTyping).toContain('GET /api/channel');
    expect(keyedAfterTyping).toContain('GET /api/topics');
    expect(requests.every((r) => r.url().startsWith(app.url))).toBe(true); // nothing from another origin

    // a narrow window: no sideways scrolling
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(200);
    expect(await page.evaluate(() => (globalThis as unknown as BrowserGlobals).document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    if (shots) await page.screenshot({ path: join(shots, 'dashboard-narrow.png'), fullPage: true });

    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);

  it("lists a queue's waiting jobs: ready and delayed, oldest and newest first, a new publish after a refresh; loading and errors in the section", async () => {
    // response jobs stay ready (their drain is off); worker jobs published delayed stay delayed
    const first = (await (await publish('response', { payload: { wj: 1, note: XSS_NOTE }, correlationId: 'wj-corr-1' })).json()) as { id: string };
    await sleep(10);
    const second = (await (await publish('response', { payload: { wj: 2 } })).json()) as { id: string };
    const later = (await (await publish('worker', { payload: { wj: 3 }, delaySeconds: 7200 })).json()) as { id: string };
    const page = await browser!.newPage({ viewport: { width: 1280, height: 900 } });
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    await page.goto(`${app.url}/api/dashboard`);
    await expect.poll(() => page.locator('#key-form').isVisible(), { timeout: 10_000 }).toBe(true);
    await page.fill('#key-input', KEY);
    await page.click('#key-form button[type="submit"]');
    const rowIds = () => page.locator('#waiting tbody tr').evaluateAll((rows) => rows.map((r) => (r as unknown as { dataset: { id: string } }).dataset.id));
    const apiIds = async (queue: string, query: string) =>
      ((await (await app.api(`queues/${queue}/messages?${query}`, { headers: keyed })).json()) as { items: Array<{ id: string }> }).items.map((i) => i.id);

    // the response queue, ready, oldest first: what the API lists, in its order; markup stays text
    await expect.poll(() => page.locator('#wj-queue option').count(), { timeout: 15_000 }).toBeGreaterThan(1);
    // picked by itself: the queue with the waiting (ready) jobs, not the first one listed (worker: delayed only)
    expect(await page.locator('#wj-queue').inputValue()).toBe('response');
    await page.selectOption('#wj-queue', 'response');
    await expect.poll(() => page.locator(`#waiting tr[data-id="${second.id}"]`).count(), { timeout: 10_000 }).toBe(1);
    expect(await page.locator('#wj-status').isVisible()).toBe(false);
    const oldest = await rowIds();
    expect(oldest).toEqual(await apiIds('response', 'state=ready&order=oldest&top=20'));
    expect(oldest.indexOf(first.id)).toBeLessThan(oldest.indexOf(second.id));
    expect(await page.locator('#wj-ready').getAttribute('aria-pressed')).toBe('true');
    const firstRow = page.locator(`#waiting tr[data-id="${first.id}"]`);
    expect(await firstRow.locator('td[data-field="correlationId"]').textContent()).toBe('wj-corr-1');
    expect(await firstRow.locator('td[data-field="attempts"]').textContent()).toBe('0');
    expect(await firstRow.locator('td[data-field="priority"]').textContent()).toBe('0'); // published without one
    expect(await firstRow.locator('td[data-field="available"]').textContent()).toMatch(/^\d+ s ago$/);
    expect(await firstRow.locator('.payload summary code').textContent()).toContain(XSS_NOTE);
    expect(await page.locator('#waiting script, #waiting img, #waiting b').count()).toBe(0);

    // newest first; then a job published while the page is open shows at the top after a refresh
    await page.click('#wj-order');
    await expect.poll(() => page.locator('#wj-order').textContent()).toBe('Newest first');
    await expect.poll(async () => (await rowIds())[0], { timeout: 10_000 }).toBe(second.id);
    expect(await rowIds()).toEqual(await apiIds('response', 'state=ready&order=newest&top=20'));
    const third = (await (await publish('response', { payload: { wj: 4 } })).json()) as { id: string };
    await page.click('#refresh');
    await expect.poll(async () => (await rowIds())[0], { timeout: 10_000 }).toBe(third.id);

    // worker's delayed jobs, newest first: the 2 h one before the three 1 h ones of the first test
    await page.selectOption('#wj-queue', 'worker');
    await page.click('#wj-delayed');
    await expect.poll(async () => (await rowIds())[0], { timeout: 10_000 }).toBe(later.id);
    expect(await rowIds()).toEqual(await apiIds('worker', 'state=delayed&order=newest&top=20'));
    expect(await page.locator('#wj-delayed').getAttribute('aria-pressed')).toBe('true');
    expect(await page.locator('#wj-delayed').textContent()).toBe('Delayed (4)');
    expect(await page.locator(`#waiting tr[data-id="${later.id}"] td[data-field="available"]`).textContent()).toMatch(/^in (1 h 59 min|2 h 0 min)$/);
    // worker's ready jobs: none (its drain took them); the section says so
    await page.click('#wj-ready');
    await expect.poll(() => page.locator('#wj-empty').textContent(), { timeout: 10_000 }).toBe('No ready jobs on worker.');
    expect(await page.locator('#waiting tbody tr').count()).toBe(0);

    // a slow answer: the section says it is loading; a failed one says why, with its status, and the rest stays
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    const isListing = (url: URL) => url.pathname.endsWith('/api/queues/worker/messages');
    await page.route(isListing, async (route) => {
      await held;
      await route.fulfill({ status: 503, headers: { 'retry-after': '5' }, contentType: 'application/problem+json', body: JSON.stringify({ type: 'about:blank', title: 'Service Unavailable', status: 503, detail: 'the database is unavailable; retry later' }) });
    });
    await page.click('#wj-order'); // back to oldest: a view not loaded yet
    await expect.poll(() => page.locator('#wj-status').getAttribute('data-state'), { timeout: 10_000 }).toBe('loading');
    expect(await page.locator('#wj-status').isVisible()).toBe(true);
    expect(await page.locator('#wj-status').textContent()).toBe('Loading waiting jobs…');
    release();
    await expect.poll(() => page.locator('#wj-status').getAttribute('data-state'), { timeout: 10_000 }).toBe('error');
    expect(await page.locator('#wj-status').textContent()).toBe('Not loaded (503): the database is unavailable; retry later');
    expect(await queueCell(page, 'worker', 'delayed').textContent()).toBe('4');
    await page.unroute(isListing);
    await page.click('#wj-delayed');
    await expect.poll(async () => (await rowIds()).at(-1), { timeout: 10_000 }).toBe(later.id); // oldest first: the 2 h one last
    expect(await page.locator('#wj-status').isVisible()).toBe(false);
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);

  it('says in the page that the store is unreachable when the data routes answer 503', async () => {
    const page = await browser!.newPage({ viewport: { width: 1280, height: 900 } });
    // what the app answers while its database cannot be reached (503 problem with Retry-After)
    const unavailable = { status: 503, headers: { 'retry-after': '5' }, contentType: 'application/problem+json', body: JSON.stringify({ type: 'about:blank', title: 'Service Unavailable', status: 503, detail: 'the database is unavailable; retry later' }) };
    for (const route of ['**/api/queues', '**/api/channel', '**/api/topics', /\/api\/flows\?/]) await page.route(route, (r) => r.fulfill(unavailable));
    await page.route('**/api/health', (r) => r.fulfill({ ...unavailable, contentType: 'application/json', body: JSON.stringify({ status: 'unavailable', store: 'pglite' }) }));
    await page.goto(`${app.url}/api/dashboard`);
    await expect.poll(() => page.locator('#loading').getAttribute('data-state'), { timeout: 10_000 }).toBe('error');
    expect(await page.locator('#loading').textContent()).toBe('Not loaded (503): the database is unavailable; retry later');
    expect(await page.locator('#health').textContent()).toBe('unavailable · pglite');
    await page.close();
  }, 30_000);

  it('shows flow runs by status and one run\'s steps as a timeline', async () => {
    const started = await app.api('flows/example-approval', postJson({ id: 'dash-flow-1', input: { item: '<i>lamp</i>', approvalQueue: 'worker' } }, keyed));
    expect(started.status).toBe(202);
    const done = await app.api('flows/example-approval/dash-flow-1?waitSeconds=30', { headers: keyed });
    expect(((await done.json()) as { status: string }).status).toBe('Succeeded');
    const page = await browser!.newPage({ viewport: { width: 1280, height: 900 } });
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    await page.goto(`${app.url}/api/dashboard`);
    await expect.poll(() => page.locator('#key-form').isVisible(), { timeout: 10_000 }).toBe(true);
    await page.fill('#key-input', KEY);
    await page.click('#key-form button[type="submit"]');
    await expect.poll(() => page.locator('#flow-counts [data-field="Succeeded"] .tile-value').textContent(), { timeout: 15_000 }).toBe('1');
    expect(await page.locator('#flow-counts [data-field="Running"] .tile-value').textContent()).toBe('0');
    expect(await page.locator('#flow-runs tr[data-run="dash-flow-1"] td[data-field="status"]').textContent()).toBe('Succeeded');
    await page.click('#flow-runs tr[data-run="dash-flow-1"] button');
    await expect.poll(() => page.locator('#flow-steps li').count(), { timeout: 10_000 }).toBe(3);
    expect(await page.locator('#flow-steps li .step-state').allTextContents()).toEqual(['completed', 'completed', 'completed']);
    expect(await page.locator('#flow-steps li[data-step="approve"]').count()).toBe(1);
    expect(await page.locator('#flow-run-title').textContent()).toMatch(/^dash-flow-1: Succeeded after \d+ executions?$/);
    expect(await page.locator('#flows-section i').count()).toBe(0); // the item's markup stays text
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);

  it('lists the schedules with their last and next run, markup as text; pauses one behind a confirmation; a failed list says so in its section', async () => {
    const put = (name: string, body: unknown) => app.api(`schedules/${encodeURIComponent(name)}`, { ...postJson(body, keyed), method: 'PUT' });
    // a yearly one (never fires here) in a zone other than UTC, named and carrying markup; one firing every 2 s on the
    // orders topic (its subscriptions' copies run and succeed)
    const yearly = await put(MARKUP_SCHEDULE, { queue: 'worker', cron: '0 0 0 1 1 *', timeZone: 'Europe/Berlin', payload: { note: XSS_NOTE }, paused: true });
    expect(yearly.status).toBe(201);
    const nextNewYear = ((await yearly.json()) as { nextRun: string }).nextRun;
    expect((await put('ticker', { topic: 'orders', cron: '*/2 * * * * *', payload: { tick: true } })).status).toBe(201);
    const ticker = async () => (await (await app.api('schedules/ticker', { headers: keyed })).json()) as { lastRun: string | null; paused: boolean };
    await eventually(async () => ((await ticker()).lastRun ? true : undefined), 'the ticker schedule to fire once', 20_000);

    const page = await browser!.newPage({ viewport: { width: 1280, height: 900 } });
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    await page.goto(`${app.url}/api/dashboard`);
    await expect.poll(() => page.locator('#key-form').isVisible(), { timeout: 10_000 }).toBe(true);
    await page.fill('#key-input', KEY);
    await page.click('#key-form button[type="submit"]');
    await expect.poll(() => page.locator('#schedules tbody tr').count(), { timeout: 15_000 }).toBe(2);
    expect(await page.locator('#sc-status').isVisible()).toBe(false);
    expect(await page.locator('#sc-empty').isVisible()).toBe(false);
    // by name, as the API lists them ('<' sorts before 't')
    expect(await page.locator('#schedules tbody tr td[data-field="name"] .schedule-name').allTextContents()).toEqual([MARKUP_SCHEDULE, 'ticker']);

    const yearlyRow = page.locator('#schedules tbody tr').nth(0);
    expect(await yearlyRow.locator('td[data-field="target"]').textContent()).toBe('queue worker');
    expect(await yearlyRow.locator('td[data-field="cron"]').textContent()).toBe('0 0 0 1 1 * Europe/Berlin');
    expect(await yearlyRow.locator('[data-field="paused"]').textContent()).toBe('paused');
    expect(await yearlyRow.locator('button[data-action]').textContent()).toBe('Resume');
    expect(await yearlyRow.locator('td[data-field="lastRun"]').textContent()).toBe('—');
    // the next run: midnight on 1 January in Berlin (the schedule's zone), and how far off it is
    const next = yearlyRow.locator('td[data-field="nextRun"]');
    expect(await next.locator('[title]').getAttribute('title')).toBe(nextNewYear);
    expect(await next.locator('.slot-time').textContent()).toMatch(/^1 Jan \d{4}, 00:00:00$/);
    expect(await next.locator('.slot-relative').textContent()).toMatch(/^ · in (\d+ d \d+ h|\d+ h \d+ min)$/);
    expect(await yearlyRow.locator('.payload summary code').textContent()).toContain(XSS_NOTE);
    expect(await page.locator('#schedules script, #schedules img, #schedules b').count()).toBe(0);

    const tickerRow = page.locator('#schedules tr[data-schedule="ticker"]');
    expect(await tickerRow.locator('td[data-field="target"]').textContent()).toBe('topic orders');
    expect(await tickerRow.locator('td[data-field="lastRun"] .slot-relative').textContent()).toMatch(/^ · \d+ s ago$/);
    // a 2 s schedule: the list was read a moment ago, so its next slot may just have passed (" · 0 s ago")
    expect(await tickerRow.locator('td[data-field="nextRun"] .slot-relative').textContent()).toMatch(/^ · (in \d+ s|[0-3] s ago)$/);
    expect(await tickerRow.locator('[data-field="paused"]').count()).toBe(0);

    // pause the ticker by clicking, behind a confirmation; the API says it is paused and the row shows it
    await tickerRow.locator('button[data-action="pause"]').click();
    await expect.poll(() => page.locator('#confirm').isVisible()).toBe(true);
    expect(await page.locator('#confirm-title').textContent()).toBe("Pause schedule 'ticker'?");
    await page.click('#confirm-ok');
    await expect.poll(() => page.locator('#notice').textContent(), { timeout: 10_000 }).toBe("Paused schedule 'ticker'.");
    expect((await ticker()).paused).toBe(true);
    await expect.poll(() => tickerRow.locator('[data-field="paused"]').textContent(), { timeout: 10_000 }).toBe('paused');
    expect(await tickerRow.locator('button[data-action]').textContent()).toBe('Resume');

    // a failed list says why in its own section; the rest of the page keeps its data, and the next refresh recovers
    const isList = (url: URL) => url.pathname.endsWith('/api/schedules');
    await page.route(isList, (route) =>
      route.fulfill({ status: 503, headers: { 'retry-after': '5' }, contentType: 'application/problem+json', body: JSON.stringify({ type: 'about:blank', title: 'Service Unavailable', status: 503, detail: 'the database is unavailable; retry later' }) }),
    );
    await page.click('#refresh');
    await expect.poll(() => page.locator('#sc-status').getAttribute('data-state'), { timeout: 10_000 }).toBe('error');
    expect(await page.locator('#sc-status').textContent()).toBe('Not loaded (503): the database is unavailable; retry later');
    expect(await page.locator('#loading').isVisible()).toBe(false);
    expect(await queueCell(page, 'worker', 'deadLettered').textContent()).toMatch(/^\d+$/);
    await page.unroute(isList);
    await page.click('#refresh');
    await expect.poll(() => page.locator('#sc-status').isVisible(), { timeout: 10_000 }).toBe(false);
    expect(await page.locator('#schedules tbody tr').count()).toBe(2);

    // a narrow window: still no sideways scrolling
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(200);
    expect(await page.evaluate(() => (globalThis as unknown as BrowserGlobals).document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);

    // none left: the section says so
    for (const name of [MARKUP_SCHEDULE, 'ticker']) expect((await app.api(`schedules/${encodeURIComponent(name)}`, { method: 'DELETE', headers: keyed })).status).toBe(204);
    await page.click('#refresh');
    await expect.poll(() => page.locator('#sc-empty').isVisible(), { timeout: 10_000 }).toBe(true);
    expect(await page.locator('#sc-empty').textContent()).toBe('No schedules.');
    expect(await page.locator('#schedules tbody tr').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as unknown as BrowserGlobals).__xss)).toBeUndefined();
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);
});

describe.skipIf(!!missing)('dashboard routes', () => {
  it('serve the three files without a key, with a CSP that allows no inline script and no other origin; nothing else', async () => {
    const page = await app.api('dashboard');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await page.text();
    expect(html).not.toMatch(/<script>|<style|style=|https?:\/\//);
    expect((await app.api('dashboard/app.js')).headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await app.api('dashboard/app.css')).headers.get('content-type')).toBe('text/css; charset=utf-8');
    for (const path of ['dashboard/index.html', 'dashboard/..%2Fpackage.json', 'dashboard/%2E%2E%2F%2E%2E%2Fpackage.json', 'dashboard/app.js.map', 'dashboard/__proto__']) {
      expect((await app.api(path)).status, path).toBe(404);
    }
    const slash = await app.api('dashboard/', { redirect: 'manual' });
    expect([slash.status, slash.headers.get('location')]).toEqual([301, '../dashboard']);
    // the data routes keep their key
    expect((await app.api('queues')).status).toBe(401);
    expect((await app.api('channel')).status).toBe(401);
    expect((await app.api('topics')).status).toBe(401);
    const queues = (await (await app.api('queues', { headers: keyed })).json()) as { items: Array<{ queue: string }> };
    expect(queues.items.map((q) => q.queue)).toEqual(['worker', BILLING_QUEUE, MARKUP_QUEUE, 'response', 'callbacks', 'flows']);
    expect(Object.keys(queues.items[0]!).sort()).toEqual(['backoffUntil', 'concurrencyLimit', 'deadLettered', 'delayed', 'leased', 'oldestReadyAgeSeconds', 'paused', 'queue', 'rateLimitPerSecond', 'ready']);
    const channel = await app.api('channel', { headers: keyed });
    expect(channel.status).toBe(200);
    expect(Object.keys((await channel.json()) as object).sort()).toEqual(['callbacksDeadLettered', 'callbacksQueued', 'liveWaiters', 'registrations', 'storedResponses']);
  });
});
