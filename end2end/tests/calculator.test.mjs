// The calculator against the release build: server-rendered numbers, then
// hydration, then live recomputation in the browser.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { launch, openPage, openAt, hydrated, text, waitOut, BASE_URL, ARTIFACTS, closeBrowser } from './helpers.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await closeBrowser(browser); });


const REFERENCE = {
  cost_per_call: 'R$ 0,165',
  monthly_revenue: 'R$ 36.000,00',
  duplicated_conversations: '900',
  monthly_token_waste: 'R$ 148,50',
  waste_share_of_revenue_pct: '0,41%',
  annual_token_waste: 'R$ 1.782,00',
  break_even_conversations: '124',
};

test('the server-rendered page shows the reference scenario, the same after hydration', async () => {
  const { context, page, errors } = await openPage(browser);
  // Read before waiting for hydration: these come from the server's HTML.
  for (const [key, want] of Object.entries(REFERENCE)) {
    assert.equal(await text(page, key), want, key);
  }
  await hydrated(page);
  for (const [key, want] of Object.entries(REFERENCE)) {
    assert.equal(await text(page, key), want, `${key} after hydration`);
  }
  assert.match(await page.locator('[data-key="monthly_token_waste"] .formula').innerText(), /900 × R\$ 0,165 = R\$ 148,50/);
  assert.match(await page.locator('[data-key="break_even_conversations"] .formula').innerText(), /⌈R\$ 148,50 \/ R\$ 1,20⌉ = 124/);
  // The wasm travels compressed (the browser asks for brotli).
  const encoding = await page.evaluate(async () => (await fetch('/pkg/idem.wasm')).headers.get('content-encoding'));
  assert.equal(encoding, 'br');
  await page.screenshot({ path: `${ARTIFACTS}/calculator-reference.png`, fullPage: true });
  assert.deepEqual(errors, []);
  await context.close();
});

test('the build travels under its digest, brotli-compressed once, and the next visit takes it from the cache', async () => {
  const { context, page, errors } = await openPage(browser);
  await hydrated(page);
  const links = await page.evaluate(() => ({
    js: document.querySelector('link[rel=modulepreload]')?.getAttribute('href'),
    wasm: document.querySelector('link[rel=preload][as=fetch]')?.getAttribute('href'),
    css: document.querySelector('link#leptos')?.getAttribute('href'),
  }));
  assert.match(links.js, /^\/pkg\/idem\.[0-9a-f]{16}\.js$/);
  assert.equal(links.wasm, links.js.replace(/\.js$/, '.wasm'));
  assert.equal(links.css, links.js.replace(/\.js$/, '.css'));
  // The server compresses its files once, at start, in the background:
  // asked directly (no browser cache), the wasm's copy is the one made then.
  let head;
  for (let t = Date.now(); Date.now() - t < 30000; await new Promise((r) => setTimeout(r, 200))) {
    const r = await fetch(`${BASE_URL}${links.wasm}`, { headers: { 'accept-encoding': 'br' } });
    head = { enc: r.headers.get('content-encoding'), cache: r.headers.get('cache-control'), etag: r.headers.get('etag') };
    await r.arrayBuffer();
    if (head.etag?.endsWith('-br"')) break;
  }
  assert.equal(head.enc, 'br');
  assert.equal(head.cache, 'public, max-age=31536000, immutable');
  // A first visit's wasm on the wire: under 200 KB (the wasm budget). Counted raw,
  // as the bytes arrive (fetch would decompress them).
  const onTheWire = await new Promise((resolve, reject) => {
    const u = new URL(`${BASE_URL}${links.wasm}`);
    http.get({ host: u.hostname, port: u.port, path: u.pathname, headers: { 'accept-encoding': 'br' } }, (res) => {
      let n = 0;
      res.on('data', (c) => { n += c.length; });
      res.on('end', () => resolve(n));
    }).on('error', reject);
  });
  assert.ok(onTheWire > 50000 && onTheWire < 200000, `the wasm is ${onTheWire} bytes on the wire`);
  // The next visit (a new tab of the same browser): the page again, its
  // script, wasm and stylesheet from the browser's cache, nothing transferred.
  const next = await context.newPage();
  next.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  next.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
  await next.goto(`${BASE_URL}/?v=2&d=4`, { waitUntil: 'load' });
  await hydrated(next);
  await waitOut(next, 'duplicated_conversations', '1.200');
  const fromCache = await next.evaluate((names) => names.map((n) => {
    const e = performance.getEntriesByType('resource').find((r) => new URL(r.name).pathname === n);
    return e ? e.transferSize === 0 && e.decodedBodySize > 0 : `${n} not fetched`;
  }), [links.js, links.wasm, links.css]);
  assert.deepEqual(fromCache, [true, true, true]);
  assert.deepEqual(errors, []);
  await context.close();
});

test('typing recomputes in the browser, keeps the text, and puts the scenario in the address bar', async () => {
  const { context, page, errors } = await openPage(browser);
  await hydrated(page);
  // Only the charts are fetched (their figures and images: the server
  // writes and draws them); the numbers are computed in the browser.
  let requests = 0;
  page.on('request', (r) => { if (!new URL(r.url()).pathname.startsWith('/charts/')) requests += 1; });
  await page.fill('#in-d', '0,5');
  await waitOut(page, 'monthly_token_waste', 'R$ 24,75');
  assert.equal(await text(page, 'duplicated_conversations'), '150');
  assert.equal(await text(page, 'annual_token_waste'), 'R$ 297,00');
  assert.equal(requests, 0, 'no request was made to recompute');
  assert.equal(await page.inputValue('#in-d'), '0,5', 'what the person typed stays');
  await page.waitForFunction(() => location.search === '?v=2&d=0.5');

  // Brazilian and international spellings of one number give one result.
  for (const typed of ['1.234,56', '1234,56', '1234.56']) {
    await page.fill('#in-tk', typed);
    await waitOut(page, 'monthly_revenue', 'R$ 37.036.800,00');
  }
  await page.waitForFunction(() => location.search === '?v=2&tk=1234.56&d=0.5');

  // Prices per 1M tokens: the text converts, the result stays, the other
  // unit's equivalent is shown beside the price.
  await page.selectOption('#in-u', '1m');
  assert.equal(await page.inputValue('#in-pi'), '15,00');
  assert.equal(await text(page, 'cost_per_call'), 'R$ 0,165');
  assert.match(await page.locator('.field:has(#in-pi) .hint').innerText(), /= R\$ 0,015 por 1k tokens/);
  await page.screenshot({ path: `${ARTIFACTS}/calculator-edited.png`, fullPage: true });

  // Restoring discards a typed contract: the page asks first.
  let asked = '';
  page.once('dialog', (d) => { asked = d.message(); d.accept(); });
  await page.click('#reset');
  await waitOut(page, 'monthly_token_waste', 'R$ 148,50');
  assert.match(asked, /Descartar o contrato digitado/);
  assert.equal(await page.inputValue('#in-d'), '3');
  assert.equal(await page.inputValue('#in-u'), '1k');
  await page.waitForFunction(() => location.search === '?v=2');
  assert.deepEqual(errors, []);
  await context.close();
});

test('bad and impossible input explains itself in place, never NaN or a blank page', async () => {
  const { context, page, errors } = await openPage(browser);
  await hydrated(page);
  await page.fill('#in-c', '30.0x0');
  await page.waitForSelector('.field:has(#in-c) .field-error');
  assert.match(await page.locator('.field:has(#in-c) .field-error').innerText(), /não é um número/);
  // The field blocks what depends on it, and only that.
  assert.match(await page.locator('[data-key="monthly_revenue"] .formula').innerText(), /aguarda o campo: Conversas por mês/);
  assert.equal(await text(page, 'monthly_revenue'), '—');
  assert.equal(await text(page, 'cost_per_call'), 'R$ 0,165');
  assert.equal(await page.getAttribute('#in-c', 'aria-invalid'), 'true');
  // Links keep the scenario from before the edit and say so.
  assert.match(await page.locator('#stale-note').innerText(), /cenário de antes desta edição/);
  assert.equal(await page.getAttribute('#share-link', 'href'), '/?v=2');
  await page.fill('#in-c', '30000');
  await page.fill('#in-d', '120');
  assert.match(await page.locator('.field:has(#in-d) .field-error').innerText(), /no máximo 100/);
  await page.screenshot({ path: `${ARTIFACTS}/calculator-bad-input.png`, fullPage: true });
  await page.fill('#in-d', '3');
  await page.fill('#in-tk', '0');
  await waitOut(page, 'break_even_conversations', '—');
  assert.match(await page.locator('[data-key="break_even_conversations"] .formula').innerText(), /nenhuma quantidade de conversas cobre o desperdício/);
  assert.equal(await text(page, 'waste_share_of_revenue_pct'), '—');
  // Half of the risk block asks for the other half.
  await page.fill('#in-ms', '50');
  assert.match(await page.locator('.field:has(#in-oc) .field-error').innerText(), /quatro campos/);
  await page.fill('#in-ac', '180');
  await page.fill('#in-oc', '12,50');
  await page.fill('#in-cr', '2');
  await waitOut(page, 'monthly_claim_exposure', 'R$ 1.620,00');
  assert.equal(await text(page, 'annual_total_cost'), 'R$ 88.722,00');
  // What a reader sees: the page's text and every field's value. Not the raw
  // HTML, whose random script nonce once spelled "NaN" and failed CI.
  const shown = await page.evaluate(() =>
    [document.body.innerText, ...[...document.querySelectorAll('input, select, output')].map((e) => e.value)].join('\n'));
  assert.doesNotMatch(shown, /NaN|Infinity|undefined/);
  assert.deepEqual(errors, []);
  await context.close();
});

test('a copied scenario link renders the same numbers on the first paint in a fresh browser', async () => {
  const first = await openPage(browser);
  await hydrated(first.page);
  await first.context.grantPermissions(['clipboard-read', 'clipboard-write']);
  await first.page.fill('#in-d', '0,5');
  await first.page.fill('#in-c', '45.000');
  await waitOut(first.page, 'monthly_token_waste', 'R$ 37,13');
  await first.page.click('#copy-link');
  await first.page.waitForSelector('.copy-status:has-text("Link copiado")');
  const copied = await first.page.evaluate(() => navigator.clipboard.readText());
  assert.equal(copied, first.page.url());
  assert.equal(new URL(copied).search, '?v=2&c=45000&d=0.5');
  assert.deepEqual(first.errors, []);
  await first.context.close();

  // A fresh context: no cookie, no state, only the link.
  const { context, page, errors } = await openPage(browser, new URL(copied).pathname + new URL(copied).search);
  assert.equal(await text(page, 'monthly_token_waste'), 'R$ 37,13');
  assert.equal(await text(page, 'annual_token_waste'), 'R$ 445,50');
  assert.equal(await page.inputValue('#in-c'), '45.000');
  await hydrated(page);
  assert.equal(await text(page, 'monthly_token_waste'), 'R$ 37,13');
  assert.equal(await page.inputValue('#in-d'), '0,5');
  assert.deepEqual(errors, []);
  await context.close();
});

test('a form submitted without JavaScript computes on the server', async () => {
  const context = await browser.newContext({ javaScriptEnabled: false });
  const page = await context.newPage();
  await page.goto(`${BASE_URL}/`);
  await page.fill('#in-d', '0,5');
  await page.fill('#in-c', '30.000');
  await Promise.all([page.waitForNavigation(), page.press('#in-d', 'Enter')]);
  assert.equal(await text(page, 'monthly_token_waste'), 'R$ 24,75');
  assert.equal(await page.inputValue('#in-c'), '30.000');
  await context.close();
});

test('the finance lead\'s USD contract against revenue in reais', async () => {
  const { context, page, errors } = await openPage(browser);
  await hydrated(page);
  // A dollar price typed while the block is in reais is a typo to fix,
  // not R$ 3: the message names the block's currency.
  for (const typo of ['$3', 'US$ 3']) {
    await page.fill('#in-pi', typo);
    assert.match(await page.locator('.field:has(#in-pi) .field-error').innerText(), /não é a moeda deste campo: ele está em Real brasileiro \(BRL\)/);
  }
  await page.selectOption('#in-pc', 'USD');
  await page.selectOption('#in-u', '1m');
  await page.fill('#in-pi', '3');
  await page.fill('#in-pca', '0,30');
  await page.fill('#in-po', '15');
  // Prices in dollars, revenue in reais: the rate is asked the Brazilian way.
  assert.match(await page.locator('label[for="in-px"]').innerText(), /US\$ 1 = R\$ \?/);
  assert.match(await page.locator('.field:has(#in-px) .field-error').innerText(), /informe o câmbio/);
  // Revenue does not depend on prices: it shows while the rate is missing.
  assert.equal(await text(page, 'monthly_revenue'), 'R$ 36.000,00');
  await page.fill('#in-px', '5,33');
  await page.fill('#in-pd', '2026-11-30');
  await page.fill('#in-cs', '40');
  await page.fill('#in-cl', '1,5');
  await page.fill('#in-dcs', '80');
  // By hand: a call's input is 8,000 × (60% × 3 + 40% × 0,30) / 1M =
  // US$ 0,01536, its output 600 × 15 / 1M = US$ 0,009; × 5,33 is
  // R$ 0,1298388 a call. A repeated call hits the cache at 80%:
  // 8,000 × (20% × 3 + 80% × 0,30) / 1M + 0,009 = US$ 0,01572 × 5,33 =
  // R$ 0,0837876. 900 duplicates × 0,0837876 = R$ 75,40884 a month,
  // R$ 904,91 a year, 0,21% of R$ 36.000; ⌈75,40884 / 1,20⌉ = 63.
  // Useful spend: 30,000 × 1,5 × 0,1298388 = R$ 5.842,746.
  await waitOut(page, 'monthly_token_waste', 'R$ 75,41');
  assert.equal(await text(page, 'cost_per_call'), 'R$ 0,1298');
  assert.equal(await text(page, 'cost_per_duplicate_call'), 'R$ 0,0838');
  assert.equal(await text(page, 'annual_token_waste'), 'R$ 904,91');
  assert.equal(await text(page, 'waste_share_of_revenue_pct'), '0,21%');
  assert.equal(await text(page, 'break_even_conversations'), '63');
  // On margin each conversation also pays its 1,5 calls:
  // ⌈75,40884 / (1,20 − 1,5 × 0,1298388)⌉ = ⌈75,0156…⌉ = 76.
  assert.equal(await text(page, 'break_even_conversations_on_margin'), '76');
  assert.match(await page.locator('[data-key="break_even_conversations_on_margin"] .formula').innerText(),
    /^⌈R\$ 75,40884 \/ \(R\$ 1,20 − 1,5 × R\$ 0,1298388\)⌉ = 76$/);
  assert.equal(await text(page, 'monthly_useful_spend'), 'R$ 5.842,75');
  assert.match(await page.locator('[data-key="cost_per_call"] .formula').innerText(),
    /\(8\.000 × \(60% × US\$ 3,00 \+ 40% × US\$ 0,30\) \+ 600 × US\$ 15,00\) \/ 1M × 5,33/);
  // The tooltip in the page's notation; every formula multiplies out by
  // hand from the operands it shows.
  assert.equal(await page.getAttribute('#out-monthly_token_waste', 'title'), 'valor exato: 75,40884');
  assert.match(await page.locator('[data-key="annual_token_waste"] .formula').innerText(), /^12 × R\$ 75,40884 = R\$ 904,91$/);
  assert.match(await page.locator('[data-key="monthly_useful_spend"] .formula').innerText(), /^30\.000 × 1,5 × R\$ 0,1298388 = R\$ 5\.842,75$/);
  assert.match(await page.locator('[data-key="monthly_token_waste"] .formula').innerText(), /^900 × R\$ 0,0837876 = R\$ 75,41$/);
  await page.waitForFunction(() => location.search === '?v=2&cs=40&cl=1.5&pi=3&pca=0.3&po=15&px=5.33&dcs=80&u=1m&pc=USD&pd=2026-11-30');
  const link = new URL(page.url());
  await page.screenshot({ path: `${ARTIFACTS}/calculator-usd-contract.png`, fullPage: true });
  assert.deepEqual(errors, []);
  await context.close();

  // The link alone, in a fresh browser without JavaScript.
  const nojs = await browser.newContext({ javaScriptEnabled: false });
  const p2 = await nojs.newPage();
  await p2.goto(`${BASE_URL}${link.pathname}${link.search}`);
  assert.equal(await text(p2, 'monthly_token_waste'), 'R$ 75,41');
  assert.equal(await p2.inputValue('#in-px'), '5,33');
  await nojs.close();
});

test('the model picker fills the prices and the link keeps them, with and without JavaScript', async () => {
  const { context, page, errors } = await openPage(browser, '/?v=2&pc=USD&px=5.33');
  await hydrated(page);
  await Promise.all([page.waitForURL(/\/prices\?/), page.click('#model-picker')]);
  await page.fill('#model-q', 'anthropic claude-3-5-sonnet');
  await Promise.all([page.waitForURL(/q=/), page.press('#model-q', 'Enter')]);
  const use = page.locator('tr[data-model="anthropic/claude-3-5-sonnet"] a.use-model');
  await Promise.all([page.waitForURL(/m=anthropic/), use.click()]);
  await hydrated(page);
  // (8,000 × 3 + 600 × 15) / 1M × 5,33 = R$ 0,17589 a call.
  assert.equal(await page.inputValue('#in-pi'), '3,00');
  assert.equal(await page.inputValue('#in-pca'), '0,30');
  assert.equal(await text(page, 'cost_per_call'), 'R$ 0,1759');
  assert.match(await page.locator('#model-note').innerText(), /anthropic\/claude-3-5-sonnet/);
  const link = new URL(page.url());
  assert.match(link.search, /pi=3&pca=0\.3&po=15&px=5\.33&u=1m&pc=USD&m=anthropic\/claude-3-5-sonnet&md=\d{4}-\d\d-\d\d/);
  // Editing a price unlinks the model.
  await page.fill('#in-po', '16');
  await page.waitForFunction(() => !location.search.includes('m=anthropic'));
  assert.deepEqual(errors, []);
  await context.close();
  for (const javaScriptEnabled of [true, false]) {
    const c = await browser.newContext({ javaScriptEnabled });
    const p = await c.newPage();
    await p.goto(`${BASE_URL}${link.pathname}${link.search}`);
    assert.equal(await text(p, 'cost_per_call'), 'R$ 0,1759');
    assert.match(await p.locator('#model-note').innerText(), /claude-3-5-sonnet/);
    await c.close();
  }
});

// The contract of a finance lead: euro prices, revenue in reais at € 1 =
// R$ 6,10. On a desktop and on a 360 px phone.
for (const viewport of [{ width: 1280, height: 720 }, { width: 360, height: 740 }]) {
  test(`a rate belongs to its two currencies, and refused means refused on the charts too (${viewport.width} px)`, async () => {
    const { context, page, errors } = await openAt(browser, '/?v=2&c=45000&tk=2.4&pc=EUR&px=6.1&pd=2026-12-01', viewport);
    await hydrated(page);
    assert.equal(await page.inputValue('#in-px'), '6,10');
    await page.waitForSelector('section.charts img');
    // Prices now in dollars: the euro's rate is dropped, and the page says
    // so and asks for the dollar's; no figure is computed at 6,1.
    await page.selectOption('#in-pc', 'USD');
    assert.equal(await page.inputValue('#in-px'), '');
    assert.equal(await page.inputValue('#in-pd'), '');
    assert.equal(await page.locator('#fx-dropped').innerText(),
      'A taxa € 1 = R$ 6,10 foi descartada: era do par EUR→BRL; informe quanto vale US$ 1 em R$.');
    assert.match(await page.locator('.field:has(#in-px) .field-error').innerText(), /informe o câmbio/);
    await waitOut(page, 'monthly_token_waste', '—');
    // The charts step aside with the results, at once.
    await page.waitForFunction(() => !document.querySelector('section.charts img'));
    assert.ok(await page.locator('#charts-blocked').isVisible());
    // Back to euros: the rate typed for them comes back, and the charts.
    await page.selectOption('#in-pc', 'EUR');
    assert.equal(await page.inputValue('#in-px'), '6,10');
    await page.waitForSelector('section.charts img');
    assert.ok(await page.locator('#fx-dropped').isHidden());
    // A model from the price table has dollar prices: the link it gives
    // drops the euro's rate and says which one it dropped.
    await Promise.all([page.waitForURL(/\/prices\?/), page.click('#model-picker')]);
    await page.fill('#model-q', 'openai gpt-4o-mini');
    await Promise.all([page.waitForURL(/q=/), page.press('#model-q', 'Enter')]);
    const use = page.locator('tr[data-model="openai/gpt-4o-mini"] a.use-model').first();
    await Promise.all([page.waitForURL(/m=openai/), use.click()]);
    await hydrated(page);
    assert.match(page.url(), /pxd=EUR:6\.1/);
    assert.doesNotMatch(page.url(), /px=/);
    assert.equal(await page.inputValue('#in-px'), '');
    assert.match(await page.locator('#fx-dropped').innerText(), /€ 1 = R\$ 6,10 foi descartada/);
    assert.equal(await text(page, 'monthly_token_waste'), '—');
    await page.screenshot({ path: `${ARTIFACTS}/calculator-rate-dropped-${viewport.width}.png`, fullPage: true });
    assert.deepEqual(errors, []);
    await context.close();
  });
}

test('a link with a Brazilian date reads it, and a bad date blanks nothing', async () => {
  // (8,000 × 0,015 + 600 × 0,075) / 1k × 5,33 = R$ 0,87945 a call.
  const { context, page, errors } = await openPage(browser, '/?v=2&pc=USD&px=5.33&pd=01/12/2026');
  await hydrated(page);
  // Shown as the page writes dates; the link keeps the ISO day.
  assert.equal(await page.inputValue('#in-pd'), '01/12/2026');
  assert.equal(await text(page, 'cost_per_call'), 'R$ 0,8795');
  assert.equal(await page.locator('#link-error').count(), 0);
  await context.close();
  for (const [lang, want] of [['', /esse dia não existe: use dd\/mm\/aaaa/], ['&lang=en-US', /no such day: write it as 4 Dec 2026/]]) {
    const bad = await openPage(browser, `/?v=2&pc=USD&px=5.33&pd=31/02/2026${lang}`);
    await hydrated(bad.page);
    assert.match(await bad.page.locator('#err-pd').innerText(), want);
    assert.match(await text(bad.page, 'cost_per_call'), /0,8795|0\.8795/);
    assert.equal(await bad.page.locator('#link-error').count(), 0);
    assert.deepEqual(bad.errors, []);
    await bad.context.close();
  }
});

for (const viewport of [{ width: 1280, height: 720 }, { width: 360, height: 740 }]) {
  test(`restoring the reference asks first, and Back brings the typed contract back (${viewport.width} px)`, async () => {
    const { context, page, errors } = await openAt(browser, '/?v=2&c=45000&tk=2.4', viewport);
    await hydrated(page);
    await page.fill('#in-d', '2,5');
    await page.waitForFunction(() => location.search.includes('d=2.5'));
    // Said no: nothing is discarded.
    let asked = '';
    page.once('dialog', (d) => { asked = d.message(); d.dismiss(); });
    await page.click('#reset');
    assert.match(asked, /Descartar o contrato digitado/);
    assert.equal(await page.inputValue('#in-c'), '45.000');
    // Said yes: the reference, and Back returns to the contract.
    page.once('dialog', (d) => d.accept());
    await page.click('#reset');
    await waitOut(page, 'monthly_token_waste', 'R$ 148,50');
    assert.equal(await page.inputValue('#in-c'), '30.000');
    await page.waitForFunction(() => location.search === '?v=2');
    // The charts' fetch settles first: a reload would cancel it.
    await page.waitForLoadState('networkidle');
    await page.goBack();
    await hydrated(page);
    await page.waitForFunction(() => document.querySelector('#in-c')?.value === '45.000');
    assert.equal(await page.inputValue('#in-d'), '2,5');
    assert.equal(await page.inputValue('#in-tk'), '2,40');
    // The reference scenario itself is restored without a question.
    const quiet = await openAt(browser, '/', viewport);
    await hydrated(quiet.page);
    let dialogs = 0;
    quiet.page.on('dialog', (d) => { dialogs += 1; d.accept(); });
    await quiet.page.click('#reset');
    assert.equal(dialogs, 0);
    await quiet.context.close();
    assert.deepEqual(errors, []);
    await context.close();
  });
}

// A finance lead's ordinary mistakes: nothing leaves the page that the
// person did not type (D1), no currency or rate is substituted (D2, D3),
// and money reopens to its currency's minor unit (D4).
test('while a field is refused, every exit carries the scenario from before the edit, never a prefix of the keystrokes', async () => {
  for (const [lang, field, typed, hint, start] of [
    ['en-US', '#in-c', '12.500', /on this page, write 12,500 or 12500/, 'v=2&c=45000'],
    ['pt-BR', '#in-tk', '1,234.56', /nesta página, escreva 1\.234,56 ou 1234,56/, 'v=2&tk=2.4'],
    ['pt-BR', '#in-d', '100,5', /no máximo 100/, 'v=2&d=2.5'],
  ]) {
    const { context, page, errors } = await openAt(browser, `/?${start}&lang=${lang}`, { width: 1366, height: 900 });
    await hydrated(page);
    const before = new URL(page.url()).search;
    // Typed key by key, as a person does: the prefixes ("12", "1,234",
    // "100") are valid scenarios on the way.
    await page.click(field, { clickCount: 3 });
    await page.keyboard.press('Backspace');
    await page.type(field, typed, { delay: 20 });
    await page.waitForSelector(`.field:has(${field}) .field-error`);
    assert.match(await page.locator(`.field:has(${field}) .field-error`).innerText(), hint, `${lang} ${typed}`);
    // Focus leaves the field: still refused, still the scenario from before.
    await page.click('h1');
    const share = await page.getAttribute('#share-link', 'href');
    const csv = await page.getAttribute('#export-csv', 'href');
    const compare = await page.getAttribute('#compare-link', 'href');
    const saved = await page.inputValue('form.save input[name="q"]');
    const want = start.replace('v=2&', '');
    for (const [exit, value] of [['share', share], ['csv', csv], ['compare', decodeURIComponent(compare)], ['save', saved]]) {
      assert.ok(value.includes(want), `${lang} ${typed}: the ${exit} carries ${want}: ${value}`);
    }
    await page.waitForFunction((b) => location.search.startsWith(b.split('&lang')[0]), before);
    assert.ok(new URL(page.url()).search.includes(want), `the address bar keeps ${want}: ${page.url()}`);
    // Saving now saves the scenario from before the edit, nothing typed half-way.
    await page.click('#save');
    await page.waitForURL(/\/s\/[0-9a-f]+/);
    assert.ok(await page.inputValue(field) !== typed.slice(0, 2));
    assert.deepEqual(errors, []);
    await context.close();
  }
});

test('an unknown or withdrawn currency in a link blocks every money figure, in the page\'s language, and the address stays', async () => {
  for (const [lang, code, why] of [
    ['pt-BR', 'XYZ', /«XYZ» não é um código de moeda ISO 4217/],
    ['en-US', 'HRK', /HRK is a withdrawn currency: EUR replaced it on 1 Jan 2023/],
  ]) {
    const link = `/?v=2&c=12500&pc=USD&u=1m&pi=2.5&po=10&rc=${code}&px=84.37&pd=2026-12-01&tk=95&d=2.5&lang=${lang}`;
    const { context, page, errors } = await openAt(browser, link, { width: 1366, height: 900 });
    await hydrated(page);
    const notice = await page.locator('#link-error').innerText();
    assert.match(notice, why);
    assert.doesNotMatch(notice, lang === 'pt-BR' ? /is not|This link/ : /não é|Este link/, 'one language');
    // No amount in a currency the link did not name, no rate reused.
    for (const key of ['monthly_revenue', 'monthly_token_waste', 'annual_token_waste', 'cost_per_call']) {
      assert.equal(await text(page, key), '—', key);
    }
    assert.equal(await text(page, 'duplicated_conversations'), '313', 'counts do not need a currency');
    const body = await page.evaluate(() => document.querySelector('.results').innerText);
    assert.doesNotMatch(body, /R\$|84,37|84\.37 |= 1[,.]00/, body);
    assert.equal(await page.inputValue('#in-rc'), '', `the select shows ${code}, not BRL`);
    assert.equal(await page.getAttribute('#share-link', 'href'), null, 'no link');
    assert.ok(await page.locator('#save').isDisabled());
    assert.equal(new URL(page.url()).search, link.slice(1), 'the address bar stays as it was');
    // Picking the currency asks for the rate; a rate of 0 is refused, not echoed as 1.
    await page.selectOption('#in-rc', 'INR');
    await page.fill('#in-px', '0');
    await page.waitForSelector('#results-fx');
    const rate = await page.locator('#results-fx').innerText();
    assert.match(rate, lang === 'pt-BR' ? /recusado ou ausente/ : /refused or missing/, rate);
    assert.doesNotMatch(rate, /= ₹ ?1[,.]00/, rate);
    await page.fill('#in-px', '84,37'.replace(',', lang === 'pt-BR' ? ',' : '.'));
    await waitOut(page, 'monthly_revenue', lang === 'pt-BR' ? '₹ 1.187.500,00' : '₹1,187,500.00');
    assert.deepEqual(errors, []);
    await context.close();
  }
});

test('money reopens to its currency\'s minor unit from a link and from a saved scenario', async () => {
  const r = await fetch(`${BASE_URL}/s`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ q: 'v=2&pc=OMR&rc=OMR&pi=0.0011&po=0.0044&tk=0.45&ms=30&ac=12.75&oc=0.8&cr=2', name: 'rials', lang: 'pt-BR' }),
    redirect: 'manual',
  });
  assert.equal(r.status, 303);
  const saved = new URL(r.headers.get('location'), BASE_URL).pathname;
  for (const [path, want] of [
    [saved, { '#in-tk': '0,450', '#in-ac': '12,750', '#in-oc': '0,800', '#in-pi': '0,0011' }],
    ['/?v=2&pc=KRW&rc=KRW&u=1m&pi=3500&po=14000&tk=1500', { '#in-tk': '1.500', '#in-pi': '3.500', '#in-po': '14.000' }],
  ]) {
    const { context, page, errors } = await openAt(browser, path, { width: 1366, height: 900 });
    await hydrated(page);
    for (const [sel, value] of Object.entries(want)) {
      assert.equal(await page.inputValue(sel), value, `${path} ${sel}`);
    }
    // On paper the same digits: the field is what prints.
    await page.emulateMedia({ media: 'print' });
    for (const [sel, value] of Object.entries(want)) {
      assert.equal(await page.inputValue(sel), value, `${path} ${sel} printed`);
    }
    assert.deepEqual(errors, []);
    await context.close();
  }
});

test('prices per 1M typed under per 1k are warned of beside them, and the switch right after relabels them', async () => {
  const { context, page, errors } = await openAt(browser, '/?v=2&pc=USD&pi=2.5&po=10&rc=INR&px=84.37&tk=95&lang=en-US', { width: 1366, height: 900 });
  await hydrated(page);
  assert.ok(await page.locator('#unit-warning').isVisible());
  assert.match(await page.locator('#unit-warning').innerText(), /look like prices per 1M tokens/);
  assert.notEqual(await text(page, 'monthly_token_waste'), '—', 'the figures stand');
  // The fix the warning suggests: the typed numbers are kept, now per 1M.
  const typed = [await page.inputValue('#in-pi'), await page.inputValue('#in-po')];
  assert.deepEqual(typed, ['2.50', '10.00']);
  await page.selectOption('#in-u', '1m');
  await page.waitForSelector('#unit-warning', { state: 'hidden' });
  assert.deepEqual([await page.inputValue('#in-pi'), await page.inputValue('#in-po')], typed);
  assert.equal(await text(page, 'cost_per_call'), '₹2.1936', 'the prices per 1M at ₹84.37');
  // Without a warning, a switch converts (the scenario stays the same).
  await page.selectOption('#in-u', '1k');
  assert.equal(await page.inputValue('#in-pi'), '0.0025');
  // The other way: per-1k prices under per 1M, in euros against yen.
  await page.goto(`${BASE_URL}/?v=2&pc=EUR&u=1m&pi=0.0025&po=0.01&rc=JPY&px=162.35&tk=120&lang=en-US`);
  await hydrated(page);
  assert.match(await page.locator('#unit-warning').innerText(), /look like prices per 1k tokens/);
  assert.deepEqual(errors, []);
  await context.close();
});

test('a rate the wrong way round is warned of, and the rate is shown both ways', async () => {
  const { context, page, errors } = await openAt(browser, '/?v=2&pc=EUR&pi=0.0025&po=0.01&rc=JPY&px=162.35&tk=120&lang=pt-BR', { width: 1366, height: 900 });
  await hydrated(page);
  assert.match(await page.locator('#fx-echo').innerText(), /€ 1 = JP¥ 162,35 .* · JP¥ 1 = € 0,00616$/);
  assert.ok(!(await page.locator('#fx-inverted').isVisible()));
  await page.fill('#in-px', '0,00616');
  await page.waitForSelector('#fx-inverted', { state: 'visible' });
  assert.match(await page.locator('#fx-inverted').innerText(), /parece invertido/);
  assert.notEqual(await text(page, 'monthly_token_waste'), '—', 'the figures stand');
  // A rate dated after today is refused under its date.
  await page.fill('#in-pd', '31/12/2999');
  await page.waitForSelector('#err-pd:not([hidden])');
  assert.match(await page.locator('#err-pd').innerText(), /data futura/);
  assert.deepEqual(errors, []);
  await context.close();
});
