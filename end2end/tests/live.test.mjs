// The live monitor in a browser: numbers that move without a reload when
// intents are recorded through the API, an expired lease listed as
// uncertain, the feed's status line, and "use these numbers".
//
// Needs IDEM_TEST_TOKEN: an API token of a tenant on the server under test
// (scripts/test creates one with `idem tenant create e2e`).
import { test, before, after } from 'node:test';
import { createServer } from 'node:http';
import { createHmac } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import assert from 'node:assert/strict';
import { BASE_URL, ARTIFACTS, launch, openPage, openAt, hydrated, axeViolations, closeBrowser } from './helpers.mjs';

const TOKEN = process.env.IDEM_TEST_TOKEN;
const TENANT = process.env.IDEM_TEST_TENANT ?? 'e2e';
let browser;
before(async () => { browser = await launch(); });
after(async () => { await closeBrowser(browser); });

const run = `${Date.now()}`;

async function api(path, body) {
  const r = await fetch(BASE_URL + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
}

const intent = (ref, valor) => api('/v1/intents', {
  action: 'pix.cobranca',
  payload: { cliente_id: 'c1', valor, chave_pix_destino: 'e2e@example.com', referencia_intencao: `${run}-${ref}` },
});

/** The number a card shows (`#live-<id> output`), as an integer. */
const card = (page, id) => page.locator(`#live-${id} output`).innerText()
  .then((t) => Number(t.replace(/\D/g, '')));

test('recorded intents, redeliveries and a divergence show within 2 s, without a reload', async () => {
  assert.ok(TOKEN, 'IDEM_TEST_TOKEN must name a tenant token');
  const { context, page, errors } = await openPage(browser, `/live?window=1h&tenant=${TENANT}`);
  await hydrated(page);
  await page.waitForFunction(() => document.querySelector('#live-status')?.dataset.state === 'live');
  assert.equal(await page.locator('#live-status').innerText(), 'ao vivo');
  await page.evaluate(() => { window.__sameDocument = true; });
  const before = {
    intents: await card(page, 'intents'),
    deliveries: await card(page, 'deliveries'),
    redeliveries: await card(page, 'redeliveries'),
    divergences: await card(page, 'divergences'),
  };
  const chartSrc = () => page.evaluate(() => document.querySelector('#live-chart-deliveries img')?.getAttribute('src') ?? null);
  const srcBefore = await chartSrc();

  for (const n of [1, 2, 3]) assert.equal((await intent(n, '10.00')).status, 201);
  assert.equal((await intent(1, '10.00')).status, 200, 'a redelivery');
  const divergent = await intent(2, '99.00');
  assert.equal(divergent.status, 200);
  assert.equal(divergent.body.diverged, true, 'a fresh extraction that would charge something else');
  const written = Date.now();

  await page.waitForFunction(
    (want) => Number(document.querySelector('#live-deliveries output')?.textContent.replace(/\D/g, '')) === want,
    before.deliveries + 5, { timeout: 2000 });
  const took = Date.now() - written;
  assert.ok(took <= 2000, `the page followed the writes after ${took} ms`);
  assert.equal(await card(page, 'intents'), before.intents + 3);
  assert.equal(await card(page, 'redeliveries'), before.redeliveries + 2);
  assert.equal(await card(page, 'divergences'), before.divergences + 1);
  assert.match(await page.locator('#live-rate output').innerText(), /% \([\d.]+ de [\d.]+ intenções\)/);
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload');
  // The charts are images the server draws; they refresh with the feed
  // (their address carries a digest of the series) and load.
  await page.waitForFunction((before) => {
    const src = document.querySelector('#live-chart-deliveries img')?.getAttribute('src');
    return src && src !== before && src.startsWith('/live/charts/deliveries.svg?window=1h&lang=pt-BR&tenant=');
  }, srcBefore, { timeout: 2000 });
  for (const id of ['live-chart-deliveries', 'live-chart-rate']) {
    await page.waitForFunction((i) => {
      const img = document.querySelector(`#${i} img`);
      return img?.complete && img.naturalWidth > 0;
    }, id, { timeout: 5000 });
  }
  const drawn = await (await fetch(BASE_URL + await chartSrc())).text();
  assert.match(drawn, /<title>Entregas e reentregas por intervalo<\/title>/);
  assert.match(drawn, /reentregas/);
  await page.screenshot({ path: `${ARTIFACTS}live-monitor.png`, fullPage: true });
  assert.deepEqual(errors, []);
  await context.close();
});

test('an expired lease shows up as uncertain, with its key', async () => {
  const { context, page, errors } = await openAt(browser, `/live?window=1h&tenant=${TENANT}`,
    { width: 1280, height: 720 }, { timezoneId: 'America/Sao_Paulo' });
  await hydrated(page);
  const key = (BigInt(run) * 7919n).toString(16).padStart(64, '0').slice(-64);
  const begin = await api(`/v1/actions/${key}/begin`, { action: 'pix.cobranca', lease_ms: 300 });
  assert.equal(begin.status, 201);
  await page.waitForFunction((k) => document.querySelector(`#live-uncertain-keys tr[data-key="${k}"]`), key, { timeout: 3000 });
  assert.match(await page.locator('#live-uncertain').getAttribute('class'), /alert/);
  assert.ok(await card(page, 'uncertain') >= 1);
  // Its row: the real action type, times in the reader's zone to the
  // second (this browser is in São Paulo), UTC on hover.
  const row = page.locator(`#live-uncertain-keys tr[data-key="${key}"]`);
  assert.equal(await row.locator('td').nth(4).innerText(), 'pix.cobranca');
  const started = row.locator('td').nth(6).locator('time');
  const utc = await started.getAttribute('title');
  assert.match(utc, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
  const shown = await started.innerText();
  assert.notEqual(shown, utc);
  const hhmmss = (t) => t.match(/(\d\d):(\d\d):(\d\d)/).slice(1).map(Number);
  const [uh, um, us] = hhmmss(utc);
  const [lh, lm, ls] = hhmmss(shown);
  assert.deepEqual([(uh - 3 + 24) % 24, um, us], [lh, lm, ls], `${shown} is ${utc} in UTC−3`);
  assert.deepEqual(errors, []);
  await context.close();
});

test('the status line says when the feed is stale, when it drops and when it comes back', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  // The first stream carries one "trouble" event and ends; the browser's
  // retry then reaches the real feed.
  let streams = 0;
  await page.route('**/live/events**', (route) => {
    streams += 1;
    if (streams > 1) return route.continue();
    return route.fulfill({
      status: 200,
      headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-store' },
      body: 'retry: 300\nevent: trouble\ndata: the database cannot be read\n\n',
    });
  });
  await page.addInitScript(() => {
    window.__states = [];
    window.__dimmed = [];
    new MutationObserver((ms) => {
      for (const m of ms) {
        if (m.attributeName === 'data-state') window.__states.push(m.target.dataset.state);
        // Whether the numbers were dimmed when the line said so.
        if (m.attributeName === 'data-stale') window.__dimmed.push(m.target.hasAttribute('data-stale'));
      }
    }).observe(document, { attributes: true, subtree: true, attributeFilter: ['data-state', 'data-stale'] });
  });
  await page.goto(`${BASE_URL}/live?window=1h&tenant=${TENANT}`, { waitUntil: 'load' });
  await page.waitForFunction(() => window.__states.includes('reconnected'), null, { timeout: 10000 });
  const states = await page.evaluate(() => window.__states);
  const at = (s) => states.indexOf(s);
  assert.ok(at('stale') >= 0 && at('stale') < at('disconnected') && at('disconnected') < at('reconnected'), states.join(' → '));
  assert.equal(await page.locator('#live-status').innerText(), 'ao vivo (reconectado)');
  assert.equal(states[0], 'connecting', 'the script takes over from the server\'s static line');
  const dimmed = await page.evaluate(() => window.__dimmed);
  assert.deepEqual([dimmed[0], dimmed.at(-1)], [true, false], 'stale numbers dimmed, fresh ones not');
  assert.equal(await page.locator('#live-root[data-stale], [data-feed][data-stale]').count(), 0);
  // The real feed still delivers: a write shows within 2 s.
  const before = await card(page, 'intents');
  assert.equal((await intent('after-reconnect', '1.00')).status, 201);
  await page.waitForFunction(
    (want) => Number(document.querySelector('#live-intents output')?.textContent.replace(/\D/g, '')) === want,
    before + 1, { timeout: 2000 });
  assert.deepEqual(errors, []);
  await context.close();
});

test('"use these numbers" opens the calculator with the measured volume and rate', async () => {
  const { context, page, errors } = await openPage(browser, `/live?window=24h&tenant=${TENANT}`);
  await hydrated(page);
  const link = page.locator('#use-numbers');
  const href = await link.getAttribute('href');
  const rate = new URLSearchParams(href.split('?')[1]).get('d');
  const volume = new URLSearchParams(href.split('?')[1]).get('c');
  assert.ok(rate && volume, href);
  assert.match(await page.locator('.use-numbers .note').innerText(), new RegExp(`tenant ${TENANT}, últimas 24 h`));
  await link.click();
  await page.waitForURL(/\/\?v=2/);
  // The calculator says where the numbers came from.
  const banner = await page.locator('#live-banner').innerText();
  assert.match(banner, new RegExp(`tenant ${TENANT}`));
  assert.match(banner, /×30/);
  assert.match(banner, /Ainda valores de referência/);
  await hydrated(page);
  assert.equal(await page.inputValue('#in-d'), rate.replace('.', ','));
  assert.equal(Number((await page.inputValue('#in-c')).replace(/\D/g, '')), Number(volume));
  // The calculator's own panel shows the server's traffic, live.
  await page.waitForFunction(() => document.querySelector('#live-panel-status')?.dataset.state === 'live');
  assert.match(await page.locator('#panel-rate dd').innerText(), /%/);
  assert.deepEqual(errors, []);
  await context.close();
});

test('the work queue: an uncertain charge shows whom and how much, and its page reconciles it', async () => {
  const ref = `${run}-wq`;
  const rec = await api('/v1/intents', {
    action: 'pix.cobranca',
    payload: { cliente_id: 'cli-wq', valor: '6577.89', chave_pix_destino: 'e2e@example.com', referencia_intencao: ref },
  });
  assert.equal(rec.status, 201);
  const key = rec.body.key;
  assert.equal((await api(`/v1/actions/${key}/begin`, { action: 'pix.cobranca', lease_ms: 300 })).status, 201);

  // Desktop, pt-BR: the list names the reference, amount and customer,
  // and the copy buttons copy them as they are.
  const desk = await openAt(browser, `/live?window=1h&tenant=${TENANT}`, { width: 1280, height: 720 },
    { permissions: ['clipboard-read', 'clipboard-write'] });
  await hydrated(desk.page);
  const row = desk.page.locator(`#live-uncertain-keys tr[data-key="${key}"]`);
  await row.waitFor({ timeout: 3000 });
  const cells = row.locator('td');
  assert.equal((await cells.nth(1).innerText()).split('\n')[0].replace(/\s*Copiar$/, ''), ref);
  assert.equal(await cells.nth(2).innerText(), '6.577,89');
  assert.match(await cells.nth(3).innerText(), /^cli-wq/);
  await cells.nth(1).locator('button.copy').click();
  assert.equal(await desk.page.evaluate(() => navigator.clipboard.readText()), ref);
  await cells.nth(0).locator('button.copy').click();
  assert.equal(await desk.page.evaluate(() => navigator.clipboard.readText()), key);
  assert.match(await desk.page.locator('#live-uncertain-csv').getAttribute('href'), /^\/live\/uncertain\.csv\?tenant=/);
  // The export downloads whole: the browser asks for it compressed (br,
  // gzip, zstd), and a stream that broke after its last row ended the
  // download "canceled".
  const [download] = await Promise.all([desk.page.waitForEvent('download'), desk.page.locator('#live-uncertain-csv').click()]);
  assert.equal(await download.failure(), null);
  const csv = await readFile(await download.path(), 'utf8');
  assert.ok(csv.includes(ref), csv);
  // The key opens the action's page: the frozen payload and the form.
  await Promise.all([desk.page.waitForURL(/\/live\/actions\//), cells.nth(0).locator('a').click()]);
  await hydrated(desk.page);
  assert.match(await desk.page.locator('#intent-reference').innerText(), new RegExp(ref));
  assert.match(await desk.page.locator('#intent-amount').innerText(), /^6\.577,89$/);
  assert.match(await desk.page.locator('#intent-payload').innerText(), /"cliente_id": "cli-wq"/);
  assert.match(await desk.page.locator('#action-state').innerText(), /incerta/);
  assert.ok(await desk.page.locator('#reconcile-form').isVisible());
  assert.deepEqual(await axeViolations(desk.page), []);
  assert.deepEqual(desk.errors, []);
  await desk.context.close();

  // Phone, English: the page fits the screen, and the form records what
  // the provider says.
  const phone = await openAt(browser, `/live/actions/${key}?tenant=${TENANT}&lang=en-US`, { width: 360, height: 740 });
  await hydrated(phone.page);
  const fits = await phone.page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
  assert.ok(fits, 'no wider than a 360 px screen');
  // A response that is not JSON is refused, and what was typed stays.
  const typo = '{"charge_id": "ch_e2e",}';
  await phone.page.locator('input[name="outcome"][value="completed"]').check();
  await phone.page.locator('#reconcile-response').fill(typo);
  await Promise.all([phone.page.waitForURL(/error=response/), phone.page.locator('#reconcile-form button[type="submit"]').click()]);
  await hydrated(phone.page);
  assert.match(await phone.page.locator('#action-notice').innerText(), /valid JSON/);
  assert.equal(await phone.page.inputValue('#reconcile-response'), typo);
  assert.ok(await phone.page.locator('input[name="outcome"][value="completed"]').isChecked());
  await phone.page.locator('#reconcile-response').fill('{"charge_id": "ch_e2e"}');
  await Promise.all([phone.page.waitForURL(/done=reconciled/), phone.page.locator('#reconcile-form button[type="submit"]').click()]);
  await hydrated(phone.page);
  assert.match(await phone.page.locator('#action-notice').innerText(), /Outcome recorded/);
  assert.match(await phone.page.locator('#action-state').innerText(), /completed \(reconciled\)/);
  assert.equal(await phone.page.locator('#reconcile-form').count(), 0);
  assert.deepEqual(await axeViolations(phone.page), []);
  assert.deepEqual(phone.errors, []);
  await phone.context.close();
});

test('an alert fires to a verifying webhook receiver, shows on /live while it fires, and resolves', async () => {
  const token = process.env.IDEM_TEST_ALERT_TOKEN;
  const port = Number(process.env.IDEM_TEST_HOOK_PORT);
  const secret = Buffer.from((process.env.IDEM_TEST_HOOK_SECRET ?? '').replace(/^whsec_/, ''), 'base64');
  assert.ok(token && port && secret.length, 'scripts/test sets up the alert (IDEM_TEST_ALERT_*, IDEM_TEST_HOOK_*)');
  // The receiver checks every signature itself (Standard Webhooks).
  const got = [];
  let bad = 0;
  const receiver = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const id = req.headers['webhook-id'];
      const ts = req.headers['webhook-timestamp'];
      const want = 'v1,' + createHmac('sha256', secret).update(`${id}.${ts}.${body}`).digest('base64');
      if (req.headers['webhook-signature'] !== want) { bad += 1; res.writeHead(401).end(); return; }
      got.push(JSON.parse(body));
      res.writeHead(204).end();
    });
  });
  await new Promise((r) => receiver.listen(port, '127.0.0.1', r));
  const arrived = async (type) => {
    const t = Date.now();
    while (!got.some((m) => m.type === type)) {
      assert.ok(Date.now() - t < 20000, `no ${type} within 20 s (got ${JSON.stringify(got)})`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return got.find((m) => m.type === type);
  };
  try {
    // Desktop, pt-BR: nothing fires until an action's outcome is unknown.
    const desk = await openAt(browser, '/live?window=1h&tenant=e2e-alerts', { width: 1280, height: 720 });
    await hydrated(desk.page);
    assert.equal(await desk.page.locator('#live-alerts').count(), 0);
    const key = (BigInt(run) * 104729n).toString(16).padStart(64, '0').slice(-64);
    const begin = await fetch(`${BASE_URL}/v1/actions/${key}/begin`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ action: 'pix.cobranca', lease_ms: 300 }),
    });
    assert.equal(begin.status, 201);
    await desk.page.locator('#live-alerts').waitFor({ timeout: 15000 });
    assert.match(await desk.page.locator('#live-alerts h3').innerText(), /^Alertas disparados \(1\)$/);
    assert.match(await desk.page.locator('#live-alerts li').innerText(), /uncertain_now = 1 > 0/);
    const firing = await arrived('alert.firing');
    assert.equal(firing.data.tenant, 'e2e-alerts');
    assert.equal(firing.data.value, '1');
    assert.deepEqual(await axeViolations(desk.page), []);
    assert.deepEqual(desk.errors, []);
    await desk.context.close();

    // Phone, English: the same alert, on a page no wider than the screen;
    // settled, it resolves and leaves the page without a reload.
    const phone = await openAt(browser, '/live?window=1h&tenant=e2e-alerts&lang=en-US', { width: 360, height: 740 });
    await hydrated(phone.page);
    assert.match(await phone.page.locator('#live-alerts h3').innerText(), /^Alerts firing \(1\)$/);
    assert.ok(await phone.page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth));
    const settled = await fetch(`${BASE_URL}/v1/actions/${key}/reconcile`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ token: 1, outcome: 'failed', error: 'the provider never got it' }),
    });
    assert.equal(settled.status, 200);
    await phone.page.locator('#live-alerts').waitFor({ state: 'detached', timeout: 15000 });
    const resolved = await arrived('alert.resolved');
    assert.equal(resolved.data.value, '0');
    assert.equal(bad, 0, 'every signature verified');
    assert.deepEqual(phone.errors, []);
    await phone.context.close();
  } finally {
    receiver.close();
  }
});
