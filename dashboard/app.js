// The operator dashboard. It reads the API (GET queues, topics, channel, health, flows, schedules, a queue's waiting jobs and dead letters) every few seconds
// and acts only through it (requeue, delete, pause and resume), sending the function key typed into the page as x-functions-key.
// Everything the server returns reaches the page as text (textContent, attribute values), never as HTML:
// payloads, reasons and headers are user input.
'use strict';

(() => {
  const REFRESH_MS = 5000;
  const HISTORY_MS = 60 * 60 * 1000;
  const DEAD_LETTERS_SHOWN = 50;
  const PREVIEW_CHARS = 140;
  const KEY_STORAGE = 'asyncresponse.functionKey';
  const SVG = 'http://www.w3.org/2000/svg';
  const $ = (id) => document.getElementById(id);

  const state = {
    queues: [],
    /** whether a refresh has succeeded since the page opened (the loading line goes away then) */
    loaded: false,
    /** queue → [{ t, depth }] since the page opened */
    history: new Map(),
    selected: null,
    selectedCount: null,
    deadLetters: [],
    /** database clock − browser clock, from /api/health, so ages do not depend on this machine's clock */
    skewMs: 0,
    timer: undefined,
    refreshing: false,
    /** the key form was opened by a 401: close it once a call succeeds */
    keyPrompted: false,
    /** the flow run whose steps are shown ({ flow, id }) */
    run: null,
  };

  // ---- the function key: session storage only -------------------------------------------------------------

  const key = {
    get() {
      try {
        return sessionStorage.getItem(KEY_STORAGE) || '';
      } catch {
        return '';
      }
    },
    set(value) {
      sessionStorage.setItem(KEY_STORAGE, value);
    },
    clear() {
      sessionStorage.removeItem(KEY_STORAGE);
    },
  };

  function showKeyForm(show) {
    $('key-form').hidden = !show;
    if (show) $('key-input').focus();
  }

  // ---- API ---------------------------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  /** A call to this app's API, relative to the page (/api/dashboard → /api/…). */
  async function api(path, init = {}) {
    const headers = new Headers(init.headers || {});
    headers.set('accept', 'application/json');
    const k = key.get();
    if (k) headers.set('x-functions-key', k);
    const res = await fetch(path, { ...init, headers, cache: 'no-store', credentials: 'omit', redirect: 'error' });
    if (res.status === 401) {
      state.keyPrompted = true;
      showKeyForm(true);
      throw new ApiError(401, k ? 'The function key was refused. Enter a valid key.' : 'This app needs a function key. Enter it above.');
    }
    if (!res.ok) {
      let detail = `${res.status} ${res.statusText}`.trim();
      try {
        const body = await res.json();
        if (body && typeof body.detail === 'string') detail = body.detail;
      } catch {
        // not a problem body: keep the status line
      }
      throw new ApiError(res.status, detail);
    }
    return res.status === 204 ? null : res.json();
  }

  const queuePath = (queue) => `queues/${encodeURIComponent(queue)}`;

  // ---- small DOM helpers (text only) ---------------------------------------------------------------------------

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name === 'class') node.className = value;
      else if (name === 'text') node.textContent = String(value);
      else if (name === 'onclick') node.addEventListener('click', value);
      else node.setAttribute(name, value === true ? '' : String(value));
    }
    for (const child of children) if (child !== null && child !== undefined) node.append(child);
    return node;
  }

  function svg(tag, attrs) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
    return node;
  }

  const formatCount = (n) => (typeof n === 'number' ? n.toLocaleString('en-US') : '—');

  function formatAge(seconds) {
    if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '—';
    const s = Math.max(0, Math.floor(seconds));
    if (s < 60) return `${s} s`;
    const m = Math.floor(s / 60);
    if (m < 60) return `${m} min ${s % 60} s`;
    const h = Math.floor(m / 60);
    if (h < 48) return `${h} h ${m % 60} min`;
    return `${Math.floor(h / 24)} d ${h % 24} h`;
  }

  let noticeTimer;
  function notice(text, kind = 'info') {
    const box = $('notice');
    box.textContent = text;
    box.dataset.kind = kind;
    box.hidden = false;
    clearTimeout(noticeTimer);
    if (kind !== 'error') noticeTimer = setTimeout(() => (box.hidden = true), 6000);
  }

  // ---- confirmation -------------------------------------------------------------------------------------------

  function confirmAction(title, text, okLabel, danger) {
    const dialog = $('confirm');
    $('confirm-title').textContent = title;
    $('confirm-text').textContent = text;
    const ok = $('confirm-ok');
    ok.textContent = okLabel;
    ok.className = danger ? 'danger' : 'primary';
    return new Promise((resolve) => {
      const done = (answer) => {
        ok.removeEventListener('click', yes);
        $('confirm-cancel').removeEventListener('click', no);
        dialog.removeEventListener('cancel', no);
        if (dialog.open) dialog.close();
        resolve(answer);
      };
      const yes = () => done(true);
      const no = () => done(false);
      ok.addEventListener('click', yes);
      $('confirm-cancel').addEventListener('click', no);
      dialog.addEventListener('cancel', no);
      dialog.showModal();
      $('confirm-cancel').focus();
    });
  }

  // ---- health ---------------------------------------------------------------------------------------------------

  async function refreshHealth() {
    const pill = $('health');
    try {
      const res = await fetch('health', { cache: 'no-store', credentials: 'omit', headers: { accept: 'application/json' } });
      const body = await res.json();
      if (body && typeof body.databaseTime === 'string') state.skewMs = Date.parse(body.databaseTime) - Date.now();
      const ok = res.ok && body.status === 'ok';
      pill.dataset.state = ok ? (body.callbacks ? 'warn' : 'ok') : 'bad';
      pill.textContent = ok ? `Healthy · ${body.store}` : `${body.status || 'Unhealthy'} · ${body.store || 'store unknown'}`;
      pill.title = [body.schema && `schema: ${body.schema}`, body.callbacks && `callbacks: ${body.callbacks}`, body.detail].filter(Boolean).join('\n');
    } catch {
      pill.dataset.state = 'bad';
      pill.textContent = 'Unreachable';
      pill.title = 'GET /api/health did not answer';
    }
  }

  // ---- queues ---------------------------------------------------------------------------------------------------

  const depthOf = (q) => q.ready + q.delayed + q.leased;

  function record(queues, now) {
    for (const q of queues) {
      const samples = state.history.get(q.queue) || [];
      samples.push({ t: now, depth: depthOf(q) });
      while (samples.length > 0 && samples[0].t < now - HISTORY_MS) samples.shift();
      state.history.set(q.queue, samples);
    }
  }

  /**
   * Depth over the time the page has been open (at most the last hour): from the first sample at the left edge to
   * the latest at the right, scaled to its own peak.
   */
  function sparkline(queue, now) {
    const W = 168;
    const H = 34;
    const P = 3;
    const samples = state.history.get(queue) || [];
    const start = samples.length > 0 ? samples[0].t : now;
    const span = Math.max(now - start, 1);
    const peak = Math.max(0, ...samples.map((s) => s.depth));
    const max = Math.max(1, peak);
    const x = (t) => P + ((t - start) / span) * (W - 2 * P);
    const y = (d) => H - P - (d / max) * (H - 2 * P);
    const minutes = Math.max(1, Math.ceil((now - start) / 60000));
    const last = samples.length > 0 ? samples[samples.length - 1].depth : 0;
    const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: 'spark', role: 'img' });
    chart.setAttribute('aria-label', `depth of ${queue} over ${minutes} min: now ${last}, peak ${peak}`);
    chart.append(svg('line', { x1: P, y1: H - P, x2: W - P, y2: H - P, class: 'spark-base' }));
    if (samples.length > 0) {
      const points = samples.map((s) => `${x(s.t).toFixed(1)},${y(s.depth).toFixed(1)}`);
      if (samples.length === 1) points.push(`${W - P},${y(samples[0].depth).toFixed(1)}`);
      const first = points[0].split(',')[0];
      const lastX = points[points.length - 1].split(',')[0];
      chart.append(svg('path', { d: `M${first},${H - P} L${points.join(' L')} L${lastX},${H - P} Z`, class: 'spark-area' }));
      chart.append(svg('polyline', { points: points.join(' '), class: 'spark-line' }));
    }
    const wrap = el('div', { class: 'spark-wrap' }, chart, el('span', { class: 'spark-label', text: `peak ${formatCount(peak)}` }));
    return wrap;
  }

  function cell(label, content, cls, field) {
    const td = el('td', { class: cls, 'data-label': label, 'data-field': field });
    td.append(content);
    return td;
  }

  /** A button that selects a queue's dead letters (queue rows and subscription rows). */
  const queueButton = (queue, text) => el('button', { type: 'button', class: 'link', title: `Show the dead letters of ${queue}`, text, onclick: () => selectQueue(queue) });

  /** Ready, delayed, leased, dead-lettered and oldest ready age of a queue (or a subscription's queue). */
  function countCells(q) {
    const dead = q.deadLettered > 0;
    const stale = q.oldestReadyAgeSeconds !== null && q.oldestReadyAgeSeconds >= 60;
    return [
      cell('Ready', formatCount(q.ready), 'num', 'ready'),
      cell('Delayed', formatCount(q.delayed), 'num', 'delayed'),
      cell('Leased', formatCount(q.leased), 'num', 'leased'),
      cell('Dead-lettered', el('span', { class: dead ? 'badge bad' : 'badge', text: formatCount(q.deadLettered) }), 'num', 'deadLettered'),
      cell('Oldest ready', el('span', { class: stale ? 'warn-text' : undefined, text: formatAge(q.oldestReadyAgeSeconds) }), 'num', 'oldestReady'),
    ];
  }

  function renderQueues(now) {
    const rows = state.queues.map((q) =>
      el(
        'tr',
        { 'data-queue': q.queue, class: q.queue === state.selected ? 'selected' : undefined },
        cell('Queue', el('span', { class: 'queue-name' }, queueButton(q.queue, q.queue), ...pauseControl(q), ...backoffTag(q)), 'name'),
        ...countCells(q),
        cell('Limits', limitsText(q), 'limits', 'limits'),
        cell('Depth', sparkline(q.queue, now), 'chart'),
      ),
    );
    $('queues').tBodies[0].replaceChildren(...rows);
    renderQueueSelect();
  }

  /** The queue's limits across instances (CONCURRENCY_LIMIT, RATE_LIMIT_PER_SECOND), or a dash. */
  function limitsText(q) {
    const parts = [];
    if (typeof q.concurrencyLimit === 'number') parts.push(`≤ ${formatCount(q.concurrencyLimit)} running`);
    if (typeof q.rateLimitPerSecond === 'number') parts.push(`≤ ${q.rateLimitPerSecond}/s`);
    return parts.length > 0 ? parts.join(' · ') : '—';
  }

  /** A "backing off" tag while a forward target's Retry-After holds the queue (until when, in its title). */
  function backoffTag(q) {
    if (typeof q.backoffUntil !== 'string') return [];
    const until = new Date(q.backoffUntil);
    return [el('span', { class: 'tag', 'data-field': 'backoff', title: `A forward target asked to retry after ${until.toLocaleTimeString()}: no instance claims until then`, text: 'backing off' })];
  }

  // ---- pause and resume (POST /api/queues/{queue}/pause|resume; every instance stops claiming) --------------------

  /** The app's own queues: pausing them stops responses, callbacks or flows for everyone, so the page offers no Pause. */
  const INTERNAL_QUEUES = ['response', 'callbacks', 'flows'];

  /**
   * A "paused" tag while claims are paused, and the button that toggles it (after a confirmation); an internal queue
   * gets an "internal" tag instead of the button, and a queue without a route (rows QUEUES does not name) a "no
   * route" tag: nothing drains it, so there is nothing to pause.
   */
  function pauseControl(q) {
    if (typeof q.paused !== 'boolean') return [];
    if (q.routed === false) {
      return [el('span', { class: 'tag', 'data-field': 'unrouted', title: 'This queue holds jobs but QUEUES does not name it: nothing drains it until it does', text: 'no route' })];
    }
    if (INTERNAL_QUEUES.includes(q.queue)) {
      const pausedTag = q.paused ? el('span', { class: 'tag', 'data-field': 'paused', title: 'No instance claims from this queue', text: 'paused' }) : null;
      return [pausedTag, el('span', { class: 'tag muted', 'data-field': 'internal', title: "The app's own queue: pause it through the API if you must (POST /api/queues/{queue}/pause)", text: 'internal' })];
    }
    const tag = q.paused ? el('span', { class: 'tag', 'data-field': 'paused', title: 'No instance claims from this queue; publishes are still accepted', text: 'paused' }) : null;
    const button = el('button', { type: 'button', class: 'small', 'data-action': q.paused ? 'resume' : 'pause', text: q.paused ? 'Resume' : 'Pause', onclick: () => togglePause(q.queue, !q.paused) });
    return [tag, button];
  }

  async function togglePause(queue, pause) {
    const ok = await confirmAction(
      pause ? `Pause '${queue}'?` : `Resume '${queue}'?`,
      pause
        ? `Every instance stops claiming jobs from '${queue}' within a second; running jobs finish, and publishes are still accepted and wait.`
        : `Every instance claims from '${queue}' again; the jobs that waited run.`,
      pause ? 'Pause' : 'Resume',
      pause,
    );
    if (!ok) return;
    try {
      await api(`${queuePath(queue)}/${pause ? 'pause' : 'resume'}`, { method: 'POST' });
      notice(pause ? `Paused '${queue}'.` : `Resumed '${queue}'.`, 'ok');
    } catch (err) {
      showError(err);
    }
    await refresh();
  }

  function renderQueueSelect() {
    const select = $('dl-queue');
    const options = state.queues.map((q) => {
      const option = el('option', { value: q.queue, text: q.deadLettered > 0 ? `${q.queue} (${formatCount(q.deadLettered)})` : q.queue });
      option.selected = q.queue === state.selected;
      return option;
    });
    select.replaceChildren(...options);
  }

  // ---- topics ---------------------------------------------------------------------------------------------------

  /** GET /api/topics: [{ topic, subscriptions: [{ subscription, queue, configured, ready, delayed, leased, deadLettered, oldestReadyAgeSeconds }] }]. */
  async function fetchTopics() {
    const body = await api('topics');
    return Array.isArray(body && body.items) ? body.items : [];
  }

  /** One heading row per topic, then a row per subscription with its queue's counts; hidden when no topic is configured. */
  function renderTopics(topics) {
    const section = $('topics-section');
    section.hidden = !Array.isArray(topics) || topics.length === 0;
    if (section.hidden) return;
    const rows = [];
    for (const t of topics) {
      const subs = Array.isArray(t.subscriptions) ? t.subscriptions : [];
      const count = subs.length === 0 ? 'no subscriptions: publishes are accepted and dropped' : `${subs.length} subscription${subs.length === 1 ? '' : 's'}`;
      rows.push(el('tr', { class: 'topic', 'data-topic': t.topic }, el('th', { scope: 'rowgroup', colspan: 7 }, el('span', { class: 'topic-name', text: t.topic }), el('span', { class: 'muted', text: count }))));
      for (const s of subs) {
        const name = el('span', { class: 'sub-name' }, el('span', { text: s.subscription }), s.configured === false ? el('span', { class: 'tag', title: "Recorded in the store but not in this instance's settings", text: 'not configured' }) : null);
        rows.push(
          el(
            'tr',
            { 'data-queue': s.queue, 'data-subscription': s.subscription, class: s.queue === state.selected ? 'selected' : undefined },
            cell('Subscription', name, 'name'),
            cell('Queue', queueButton(s.queue, s.queue), 'queue-cell'),
            ...countCells(s),
          ),
        );
      }
    }
    $('topics').tBodies[0].replaceChildren(...rows);
  }

  // ---- response channel -----------------------------------------------------------------------------------------

  function renderChannel(c) {
    const tile = (field, label, value, hint, bad) =>
      el('div', { class: bad ? 'tile bad' : 'tile', 'data-field': field }, el('span', { class: 'tile-value', text: formatCount(value) }), el('span', { class: 'tile-label', text: label }), el('span', { class: 'tile-hint', text: hint }));
    $('channel').replaceChildren(
      // every response in the table, delivered or not (a delivered one stays until MESSAGE_RETENTION_SECONDS ends): not a backlog
      tile('storedResponses', 'Responses kept', c.storedResponses, 'delivered or not, until their retention ends'),
      tile('liveWaiters', 'Live waiters', c.liveWaiters, 'GETs waiting now'),
      tile('registrations', 'Registrations', c.registrations, 'callback URLs registered'),
      tile('callbacksQueued', 'Callbacks queued', c.callbacksQueued, 'ready, delayed or sending'),
      tile('callbacksDeadLettered', 'Callbacks dead-lettered', c.callbacksDeadLettered, 'see the callbacks queue', c.callbacksDeadLettered > 0),
    );
  }

  // ---- flows -----------------------------------------------------------------------------------------------------

  /** GET /api/flows: { items, counts, flows }; null when flows are not enabled (404). */
  async function fetchFlows() {
    try {
      return await api('flows?limit=20');
    } catch (err) {
      if (err && err.status === 404) return null;
      throw err;
    }
  }

  /** Counts by status as tiles, the latest runs as rows (a run's id opens its steps); hidden without flows. */
  function renderFlows(body) {
    const section = $('flows-section');
    section.hidden = !body || !body.counts;
    if (section.hidden) return;
    const tile = (status, hint, bad) =>
      el('div', { class: bad ? 'tile bad' : 'tile', 'data-field': status }, el('span', { class: 'tile-value', text: formatCount(body.counts[status]) }), el('span', { class: 'tile-label', text: status }), el('span', { class: 'tile-hint', text: hint }));
    $('flow-counts').replaceChildren(
      tile('Running', 'executing, sleeping or waiting'),
      tile('Suspended', 'parked by an operator'),
      tile('Succeeded', 'ended with a result'),
      tile('Failed', 'ended with an error', body.counts.Failed > 0),
    );
    const items = Array.isArray(body.items) ? body.items : [];
    $('flow-runs').tBodies[0].replaceChildren(
      ...items.map((r) =>
        el(
          'tr',
          { 'data-run': r.id },
          cell('Run', el('button', { type: 'button', class: 'link', title: `Show the steps of ${r.id}`, text: r.id, onclick: () => showRun(r.flowName, r.id).catch(showError) }), 'name'),
          cell('Flow', r.flowName),
          cell('Status', el('span', { class: r.status === 'Failed' ? 'badge bad' : 'badge', text: r.status }), undefined, 'status'),
          cell('Updated', new Date(r.updatedAt).toLocaleTimeString('en-GB')),
          cell('Last message', preview(r.lastMessage || '')),
        ),
      ),
    );
    if (state.run) showRun(state.run.flow, state.run.id).catch(showError);
  }

  /** One run's steps in order: name, state, and its times (or what it waits for). */
  async function showRun(flow, id) {
    state.run = { flow, id };
    const run = await api(`flows/${encodeURIComponent(flow)}/${encodeURIComponent(id)}`);
    $('flow-run').hidden = false;
    $('flow-run-title').textContent = `${run.id}: ${run.status} after ${run.attempts} execution${run.attempts === 1 ? '' : 's'}`;
    const when = (s) =>
      s.completedAt ? `done ${new Date(s.completedAt).toLocaleTimeString('en-GB')}` : s.wakeAt ? `until ${new Date(s.wakeAt).toLocaleString('en-GB')}` : s.correlationId ? `waits for ${s.correlationId}` : s.childId ? `waits for ${s.childId}` : '';
    // a Failed (or cancelled) run restarts from any step it recorded: the steps before it keep their results
    const restartButton = (s) =>
      run.status === 'Failed'
        ? el('button', { type: 'button', class: 'small', 'data-action': 'restart', title: `Run '${s.name}' and every step after it again`, text: 'Restart from here', onclick: () => restartRun(flow, id, s.name) })
        : null;
    $('flow-steps').replaceChildren(
      ...(run.steps || []).map((s) =>
        el('li', { 'data-step': s.name }, el('span', { text: s.name }), el('span', { class: 'step-state', text: s.state }), el('span', { class: 'muted', text: [when(s), s.error || s.message || ''].filter(Boolean).join(' · ') }), restartButton(s)),
      ),
    );
  }

  async function restartRun(flow, id, step) {
    const ok = await confirmAction(
      `Restart '${id}' from '${step}'?`,
      `The steps before '${step}' keep their results; '${step}' and every step after it run again (an awaited step asks again with a new correlation id). The run is Running at once.`,
      'Restart',
      true,
    );
    if (!ok) return;
    try {
      await api(`flows/${encodeURIComponent(flow)}/${encodeURIComponent(id)}/restart`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ fromStep: step }) });
      notice(`Restarted '${id}' from '${step}'.`, 'ok');
    } catch (err) {
      showError(err);
    }
    await showRun(flow, id).catch(showError);
  }

  // ---- dead letters ---------------------------------------------------------------------------------------------

  function preview(payload) {
    let text;
    try {
      text = typeof payload === 'string' ? payload : JSON.stringify(payload);
    } catch {
      text = String(payload);
    }
    if (text === undefined) text = String(payload);
    return text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text;
  }

  function pretty(value) {
    try {
      return typeof value === 'string' ? value : JSON.stringify(value, null, 2);
    } catch {
      return String(value);
    }
  }

  function renderDeadLetters() {
    const items = state.deadLetters;
    const now = Date.now() + state.skewMs;
    const rows = items.map((d) => {
      const ageSeconds = (now - Date.parse(d.createdAt)) / 1000;
      const details = el(
        'details',
        { class: 'payload' },
        el('summary', {}, el('code', { text: preview(d.payload) })),
        el('pre', { text: pretty(d.payload) }),
        el('p', { class: 'muted', text: 'Headers' }),
        el('pre', { text: pretty(d.headers || {}) }),
        el('p', { class: 'muted', text: `id ${d.id}` }),
      );
      const actions = el(
        'div',
        { class: 'row-actions' },
        el('button', { type: 'button', class: 'small', 'data-action': 'requeue', text: 'Requeue', onclick: () => requeue([d]) }),
        el('button', { type: 'button', class: 'small danger', 'data-action': 'delete', text: 'Delete', onclick: () => remove([d]) }),
      );
      return el(
        'tr',
        { 'data-id': d.id },
        cell('Age', el('span', { title: d.createdAt, text: formatAge(ageSeconds) }), 'nowrap'),
        cell('Reason', el('span', { class: 'reason', title: d.reason || '', text: d.reason || '—' }), 'reason-cell'),
        cell('Source', d.sourceQueue, 'nowrap'),
        cell('Attempts', typeof d.attempts === 'number' ? formatCount(d.attempts) : '—', 'num'),
        cell('Payload', details, 'payload-cell'),
        cell('Actions', actions, 'right'),
      );
    });
    $('deadletters').tBodies[0].replaceChildren(...rows);
    $('dl-empty').hidden = items.length > 0;
    $('dl-empty').textContent = state.selected ? `No dead letters from ${state.selected}.` : 'No queue selected.';
    $('dl-requeue-all').disabled = items.length === 0;
    $('dl-delete-all').disabled = items.length === 0;
    $('dl-requeue-all').textContent = items.length > 0 ? `Requeue all shown (${items.length})` : 'Requeue all shown';
    $('dl-delete-all').textContent = items.length > 0 ? `Delete all shown (${items.length})` : 'Delete all shown';
  }

  async function loadDeadLetters() {
    if (!state.selected) {
      state.deadLetters = [];
      renderDeadLetters();
      return;
    }
    const queue = state.selected;
    const body = await api(`${queuePath(queue)}/deadletters?top=${DEAD_LETTERS_SHOWN}`);
    if (queue !== state.selected) return;
    state.deadLetters = Array.isArray(body && body.items) ? body.items : [];
    renderDeadLetters();
  }

  function selectQueue(queue) {
    state.selected = queue;
    const q = state.queues.find((x) => x.queue === queue);
    state.selectedCount = q ? q.deadLettered : null;
    for (const tr of [...$('queues').tBodies[0].rows, ...$('topics').tBodies[0].rows]) tr.classList.toggle('selected', tr.dataset.queue === queue);
    renderQueueSelect();
    loadDeadLetters().catch(showError);
  }

  /** One API call per dead letter, one after another; returns how many succeeded. */
  async function each(items, call) {
    let done = 0;
    const failures = [];
    for (const d of items) {
      try {
        await call(d);
        done++;
      } catch (err) {
        failures.push(err instanceof Error ? err.message : String(err));
        if (err instanceof ApiError && err.status === 401) break;
      }
    }
    return { done, failures };
  }

  function report(verb, items, result) {
    const what = (n) => `${n} dead letter${n === 1 ? '' : 's'}`;
    if (result.failures.length === 0) notice(`${verb} ${what(result.done)}.`, 'ok');
    else notice(`${verb} ${what(result.done)}; ${result.failures.length} failed: ${result.failures[0]}`, 'error');
  }

  async function requeue(items) {
    const queue = state.selected;
    if (!queue || items.length === 0) return;
    const one = items.length === 1;
    const ok = await confirmAction(
      one ? 'Requeue this dead letter?' : `Requeue ${items.length} dead letters?`,
      one
        ? `Dead letter ${items[0].id} goes back on '${queue}' with its attempts reset, and runs again.`
        : `The ${items.length} dead letters shown go back on '${queue}' with their attempts reset, and run again.`,
      one ? 'Requeue' : `Requeue ${items.length}`,
      false,
    );
    if (!ok) return;
    const result = await each(items, (d) => api(`${queuePath(queue)}/deadletters/${encodeURIComponent(d.id)}/requeue`, { method: 'POST' }));
    report('Requeued', items, result);
    await refresh({ deadLetters: true });
  }

  async function remove(items) {
    const queue = state.selected;
    if (!queue || items.length === 0) return;
    const one = items.length === 1;
    const ok = await confirmAction(
      one ? 'Delete this dead letter?' : `Delete ${items.length} dead letters?`,
      one ? `Dead letter ${items[0].id} from '${queue}' is deleted for good.` : `The ${items.length} dead letters shown from '${queue}' are deleted for good.`,
      one ? 'Delete' : `Delete ${items.length}`,
      true,
    );
    if (!ok) return;
    const result = await each(items, (d) => api(`${queuePath(queue)}/deadletters/${encodeURIComponent(d.id)}`, { method: 'DELETE' }));
    report('Deleted', items, result);
    await refresh({ deadLetters: true });
  }

  // ---- waiting jobs ---------------------------------------------------------------------------------------------
  // A queue's first page of waiting (unleased) jobs: GET /api/queues/{queue}/messages?state=ready|delayed&order=…

  const WAITING_SHOWN = 20;
  const waiting = {
    queue: null,
    state: 'ready',
    order: 'oldest',
    items: [],
    /** whether this view (queue, state, order) has been loaded once: until then the status line says loading */
    loadedKey: null,
    loading: false,
  };
  const waitingKey = () => `${waiting.queue}\n${waiting.state}\n${waiting.order}`;

  function renderWaitingControls() {
    const select = $('wj-queue');
    const options = state.queues.map((q) => {
      const option = el('option', { value: q.queue, text: `${q.queue} (${formatCount(q.ready)} ready, ${formatCount(q.delayed)} delayed)` });
      option.selected = q.queue === waiting.queue;
      return option;
    });
    select.replaceChildren(...options);
    const current = state.queues.find((q) => q.queue === waiting.queue);
    for (const [id, which] of [['wj-ready', 'ready'], ['wj-delayed', 'delayed']]) {
      const button = $(id);
      button.setAttribute('aria-pressed', String(waiting.state === which));
      button.textContent = `${which === 'ready' ? 'Ready' : 'Delayed'}${current ? ` (${formatCount(current[which])})` : ''}`;
    }
    const order = $('wj-order');
    order.dataset.order = waiting.order;
    order.textContent = waiting.order === 'oldest' ? 'Oldest first' : 'Newest first';
  }

  function waitingStatus(failure) {
    const box = $('wj-status');
    const loaded = waiting.loadedKey === waitingKey();
    box.hidden = loaded && !failure;
    box.dataset.state = failure ? 'error' : 'loading';
    const status = failure instanceof ApiError ? ` (${failure.status})` : '';
    box.textContent = failure ? `Not loaded${status}: ${failure instanceof Error ? failure.message : String(failure)}` : 'Loading waiting jobs…';
  }

  function renderWaiting() {
    const now = Date.now() + state.skewMs;
    const rows = waiting.items.map((m) => {
      const untilSeconds = (Date.parse(m.availableAt) - now) / 1000;
      const available = waiting.state === 'delayed' ? `in ${formatAge(untilSeconds)}` : `${formatAge(-untilSeconds)} ago`;
      const details = el(
        'details',
        { class: 'payload' },
        el('summary', {}, el('code', { text: preview(m.payload) })),
        el('pre', { text: pretty(m.payload) }),
        el('p', { class: 'muted', text: 'Headers' }),
        el('pre', { text: pretty(m.headers || {}) }),
        el('p', { class: 'muted', text: `id ${m.id}` }),
      );
      return el(
        'tr',
        { 'data-id': m.id },
        cell('Priority', typeof m.priority === 'number' ? String(m.priority) : '0', 'num', 'priority'),
        cell('Available', el('span', { title: m.availableAt, text: available }), 'nowrap', 'available'),
        cell('Created', el('span', { title: m.createdAt, text: `${formatAge((now - Date.parse(m.createdAt)) / 1000)} ago` }), 'nowrap', 'created'),
        cell('Attempts', formatCount(m.attempts), 'num', 'attempts'),
        cell('Correlation id', m.correlationId || '—', 'nowrap', 'correlationId'),
        cell('Payload', details, 'payload-cell'),
      );
    });
    $('waiting').tBodies[0].replaceChildren(...rows);
    const loaded = waiting.loadedKey === waitingKey();
    $('wj-empty').hidden = !loaded || waiting.items.length > 0;
    $('wj-empty').textContent = waiting.queue ? `No ${waiting.state} jobs on ${waiting.queue}.` : 'No queue selected.';
    const current = state.queues.find((q) => q.queue === waiting.queue);
    const total = current ? current[waiting.state] : null;
    $('wj-note').textContent =
      loaded && waiting.items.length > 0 && typeof total === 'number' && total > waiting.items.length
        ? `The ${waiting.order} ${formatCount(waiting.items.length)} of ${formatCount(total)} ${waiting.state} jobs.`
        : '';
  }

  /** Loads the current view; a failure shows in the section's own status line (the rest of the page keeps its data). */
  async function loadWaiting() {
    if (!waiting.queue || !state.queues.some((q) => q.queue === waiting.queue)) {
      // the queue with the most waiting jobs (ready, then delayed), not merely the first one listed
      const most = [...state.queues].sort((a, b) => b.ready - a.ready || b.delayed - a.delayed)[0];
      waiting.queue = most ? most.queue : null;
    }
    renderWaitingControls();
    if (!waiting.queue) {
      waiting.items = [];
      waiting.loadedKey = waitingKey();
      waitingStatus();
      renderWaiting();
      return;
    }
    const asked = waitingKey();
    if (waiting.loadedKey !== asked) {
      waiting.items = [];
      renderWaiting();
    }
    waitingStatus();
    try {
      const body = await api(`${queuePath(waiting.queue)}/messages?state=${waiting.state}&order=${waiting.order}&top=${WAITING_SHOWN}`);
      if (asked !== waitingKey()) return; // the view changed meanwhile: its own load renders it
      waiting.items = Array.isArray(body && body.items) ? body.items : [];
      waiting.loadedKey = asked;
      waitingStatus();
      renderWaiting();
    } catch (err) {
      if (asked !== waitingKey()) return;
      waitingStatus(err);
    }
  }

  function changeWaiting(change) {
    Object.assign(waiting, change);
    loadWaiting();
  }

  function wireWaiting() {
    $('wj-queue').addEventListener('change', (event) => changeWaiting({ queue: event.target.value }));
    $('wj-ready').addEventListener('click', () => changeWaiting({ state: 'ready' }));
    $('wj-delayed').addEventListener('click', () => changeWaiting({ state: 'delayed' }));
    $('wj-order').addEventListener('click', () => changeWaiting({ order: waiting.order === 'oldest' ? 'newest' : 'oldest' }));
  }

  // ---- job search ----------------------------------------------------------------------------------------------
  // A UUID: GET /api/jobs/{id} (any state). Otherwise GET /api/jobs?correlationId=…|queue=… (completed jobs of the
  // history, newest first), with More for the next page. Runs on demand only: the auto-refresh leaves it alone.

  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  const jobSearch = { query: null, cursor: null, items: [] };

  function renderJobQueues() {
    const select = $('js-queue');
    const chosen = select.value;
    const options = [el('option', { value: '', text: 'any' }), ...state.queues.map((q) => el('option', { value: q.queue, text: q.queue }))];
    select.replaceChildren(...options);
    select.value = state.queues.some((q) => q.queue === chosen) ? chosen : '';
  }

  function renderJobs() {
    const now = Date.now() + state.skewMs;
    const rows = jobSearch.items.map((j) =>
      el(
        'tr',
        { 'data-id': j.id },
        cell('Job', el('code', { text: j.id, title: j.correlationId ? `correlation id ${j.correlationId}` : undefined }), 'nowrap', 'id'),
        cell('State', j.state, 'nowrap', 'state'),
        cell('Queue', j.queue, 'nowrap', 'queue'),
        cell('Attempts', formatCount(j.attempts), 'num', 'attempts'),
        cell('Completed', j.completedAt ? el('span', { title: j.completedAt, text: `${formatAge((now - Date.parse(j.completedAt)) / 1000)} ago` }) : '—', 'nowrap', 'completed'),
        cell('Last error', j.lastError || '—', '', 'lastError'),
      ),
    );
    $('jobs').tBodies[0].replaceChildren(...rows);
    $('js-results').hidden = jobSearch.items.length === 0;
    $('js-more').hidden = !jobSearch.cursor;
  }

  async function searchJobs(more) {
    const text = $('js-text').value.trim();
    const queue = $('js-queue').value;
    const status = $('js-status');
    if (!more) {
      jobSearch.items = [];
      jobSearch.cursor = null;
      if (UUID.test(text)) jobSearch.query = null;
      else if (text || queue) jobSearch.query = [text ? `correlationId=${encodeURIComponent(text)}` : '', queue ? `queue=${encodeURIComponent(queue)}` : ''].filter(Boolean).join('&');
      else {
        status.textContent = 'Type a job id or a correlation id, or choose a queue.';
        renderJobs();
        return;
      }
    }
    status.textContent = 'Searching…';
    try {
      if (!more && UUID.test(text)) {
        jobSearch.items = [await api(`jobs/${encodeURIComponent(text.toLowerCase())}`)];
      } else {
        const body = await api(`jobs?${jobSearch.query}&top=20${jobSearch.cursor ? `&cursor=${encodeURIComponent(jobSearch.cursor)}` : ''}`);
        jobSearch.items = jobSearch.items.concat(Array.isArray(body && body.items) ? body.items : []);
        jobSearch.cursor = body && body.nextCursor ? body.nextCursor : null;
      }
      status.textContent = jobSearch.items.length === 0 ? 'No completed jobs found.' : '';
    } catch (err) {
      status.textContent = err instanceof ApiError && err.status === 404 ? 'No job with this id (never published, cancelled, completed without history, or pruned).' : `Not found: ${err instanceof Error ? err.message : String(err)}`;
    }
    renderJobs();
  }

  function wireJobSearch() {
    $('js-form').addEventListener('submit', (event) => {
      event.preventDefault();
      searchJobs(false);
    });
    $('js-more').addEventListener('click', () => searchJobs(true));
  }

  // ---- schedules -----------------------------------------------------------------------------------------------
  // GET /api/schedules: every recurring schedule with its last and next run; pause/resume through POST …/pause|resume.

  const schedules = { items: [], loaded: false };
  const schedulePath = (name) => `schedules/${encodeURIComponent(name)}`;

  function schedulesStatus(failure) {
    const box = $('sc-status');
    box.hidden = schedules.loaded && !failure;
    box.dataset.state = failure ? 'error' : 'loading';
    const status = failure instanceof ApiError ? ` (${failure.status})` : '';
    box.textContent = failure ? `Not loaded${status}: ${failure instanceof Error ? failure.message : String(failure)}` : 'Loading schedules…';
  }

  /** A slot as a date and time in the schedule's own zone (the browser's when it does not know that zone). */
  function slotTime(iso, timeZone) {
    const date = new Date(iso);
    try {
      return date.toLocaleString('en-GB', { timeZone, dateStyle: 'medium', timeStyle: 'medium' });
    } catch {
      return date.toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'medium' });
    }
  }

  /** "12 Mar 2025, 03:00:00 · in 5 h 2 min" (or "… ago"); "—" for none. */
  function slotCell(label, field, iso, timeZone, now) {
    if (!iso) return cell(label, '—', 'nowrap', field);
    const seconds = (Date.parse(iso) - now) / 1000;
    const relative = seconds >= 0 ? `in ${formatAge(seconds)}` : `${formatAge(-seconds)} ago`;
    return cell(label, el('span', { title: iso }, el('span', { class: 'slot-time', text: slotTime(iso, timeZone) }), el('span', { class: 'muted slot-relative', text: ` · ${relative}` })), 'nowrap', field);
  }

  function renderSchedules() {
    const now = Date.now() + state.skewMs;
    const rows = schedules.items.map((s) => {
      const target = s.topic !== undefined ? `topic ${s.topic}` : `queue ${s.queue}`;
      const misfire = s.misfire && typeof s.misfire === 'object' ? `misfire: catch up ${s.misfire.catchUp}` : 'misfire: skip';
      const tag = s.paused ? el('span', { class: 'tag', 'data-field': 'paused', title: 'Fires nothing until resumed', text: 'paused' }) : null;
      const button = el('button', { type: 'button', class: 'small', 'data-action': s.paused ? 'resume' : 'pause', text: s.paused ? 'Resume' : 'Pause', onclick: () => toggleSchedule(s.name, !s.paused) });
      const details = el(
        'details',
        { class: 'payload' },
        el('summary', {}, el('code', { text: preview(s.payload) })),
        el('pre', { text: pretty(s.payload) }),
        el('p', { class: 'muted', text: 'Headers' }),
        el('pre', { text: pretty(s.headers || {}) }),
        s.correlationId ? el('p', { class: 'muted', text: `correlation id ${s.correlationId}` }) : null,
      );
      return el(
        'tr',
        { 'data-schedule': s.name },
        cell('Schedule', el('span', { class: 'queue-name' }, el('span', { class: 'schedule-name', text: s.name }), tag, button), 'name', 'name'),
        cell('Target', target, 'nowrap', 'target'),
        cell('Cron', el('span', { title: misfire }, el('code', { text: s.cron }), el('span', { class: 'muted', text: ` ${s.timeZone}` })), 'nowrap', 'cron'),
        slotCell('Last run', 'lastRun', s.lastRun, s.timeZone, now),
        slotCell('Next run', 'nextRun', s.nextRun, s.timeZone, now),
        cell('Payload', details, 'payload-cell'),
      );
    });
    $('schedules').tBodies[0].replaceChildren(...rows);
    $('sc-empty').hidden = !schedules.loaded || schedules.items.length > 0;
  }

  /** Loads the list; a failure shows in the section's own status line (the rest of the page keeps its data). */
  async function loadSchedules() {
    schedulesStatus();
    try {
      const body = await api('schedules');
      schedules.items = Array.isArray(body && body.items) ? body.items : [];
      schedules.loaded = true;
      schedulesStatus();
      renderSchedules();
    } catch (err) {
      schedulesStatus(err);
    }
  }

  async function toggleSchedule(name, pause) {
    const ok = await confirmAction(
      pause ? `Pause schedule '${name}'?` : `Resume schedule '${name}'?`,
      pause ? `'${name}' fires nothing until it is resumed; jobs it already published stay on their queue.` : `'${name}' fires again from its next slot after now; the slots passed while paused do not run.`,
      pause ? 'Pause' : 'Resume',
      pause,
    );
    if (!ok) return;
    try {
      await api(`${schedulePath(name)}/${pause ? 'pause' : 'resume'}`, { method: 'POST' });
      notice(pause ? `Paused schedule '${name}'.` : `Resumed schedule '${name}'.`, 'ok');
    } catch (err) {
      showError(err);
    }
    await loadSchedules();
  }

  // ---- refresh loop ---------------------------------------------------------------------------------------------

  function showError(err) {
    notice(err instanceof Error ? err.message : String(err), 'error');
  }

  /** The loading line: shown until the first refresh succeeds; a failed one says why there (and stays until one succeeds). */
  function showLoading(failure) {
    const box = $('loading');
    if (state.loaded) return void (box.hidden = true);
    box.hidden = false;
    box.dataset.state = failure ? 'error' : 'loading';
    const status = failure instanceof ApiError ? ` (${failure.status})` : '';
    box.textContent = failure
      ? `Not loaded${status}: ${failure instanceof Error ? failure.message : String(failure)}`
      : 'Loading queues, topics and the response channel…';
  }

  async function refresh(options = {}) {
    if (state.refreshing) return;
    state.refreshing = true;
    try {
      await refreshHealth();
      const [queues, channel, topics, flows] = await Promise.all([api('queues'), api('channel'), fetchTopics(), fetchFlows()]);
      const now = Date.now();
      state.queues = Array.isArray(queues && queues.items) ? queues.items : [];
      record(state.queues, now);
      if (!state.selected || !state.queues.some((q) => q.queue === state.selected)) {
        const withDead = state.queues.find((q) => q.deadLettered > 0);
        state.selected = (withDead || state.queues[0] || { queue: null }).queue;
        state.selectedCount = null;
      }
      renderQueues(now);
      renderJobQueues();
      renderTopics(topics);
      renderChannel(channel);
      renderFlows(flows);
      const current = state.queues.find((q) => q.queue === state.selected);
      const count = current ? current.deadLettered : null;
      if (options.deadLetters || count !== state.selectedCount) {
        state.selectedCount = count;
        await loadDeadLetters();
      } else {
        renderDeadLetters(); // ages move on
      }
      $('updated').textContent = `Updated ${new Date(now).toLocaleTimeString('en-GB')}`;
      state.loaded = true;
      showLoading();
      if (!$('notice').hidden && $('notice').dataset.kind === 'error') $('notice').hidden = true;
      if (state.keyPrompted) {
        state.keyPrompted = false;
        showKeyForm(false);
      }
      // after the page counts as loaded: their failures show in their own sections
      await Promise.all([loadWaiting(), loadSchedules()]);
    } catch (err) {
      // before the first load the loading line says why (a second notice would only repeat it), and the sections
      // that load after the counts (waiting jobs, schedules) have nothing to wait for until a refresh gets through
      if (state.loaded) showError(err);
      else {
        $('wj-status').hidden = true;
        $('sc-status').hidden = true;
      }
      showLoading(err);
    } finally {
      state.refreshing = false;
    }
  }

  function schedule() {
    clearInterval(state.timer);
    state.timer = undefined;
    if ($('auto').checked) {
      state.timer = setInterval(() => {
        if (!document.hidden) refresh();
      }, REFRESH_MS);
    }
  }

  // ---- wiring ---------------------------------------------------------------------------------------------------

  function start() {
    $('refresh').addEventListener('click', () => refresh({ deadLetters: true }));
    $('auto').addEventListener('change', schedule);
    $('key-button').addEventListener('click', () => showKeyForm($('key-form').hidden));
    $('key-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const value = $('key-input').value.trim();
      $('key-input').value = '';
      if (value) key.set(value);
      showKeyForm(false);
      refresh({ deadLetters: true });
    });
    $('key-forget').addEventListener('click', () => {
      key.clear();
      notice('The key is forgotten in this tab.', 'info');
    });
    $('dl-queue').addEventListener('change', (event) => selectQueue(event.target.value));
    $('dl-requeue-all').addEventListener('click', () => requeue(state.deadLetters.slice()));
    $('dl-delete-all').addEventListener('click', () => remove(state.deadLetters.slice()));
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden && $('auto').checked) refresh();
    });
    wireWaiting();
    wireJobSearch();
    renderDeadLetters();
    refresh({ deadLetters: true });
    schedule();
  }

  start();
})();
