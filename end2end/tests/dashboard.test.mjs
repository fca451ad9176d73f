// The rest of the dashboard against the release build: the language switch,
// saved and compared scenarios, the charts, CSV export and print.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { launch, openPage, openAt, hydrated, text, waitOut, BASE_URL, ARTIFACTS, closeBrowser } from './helpers.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await closeBrowser(browser); });


test('English by the visible switch: numbers, inputs, address bar and cookie follow', async () => {
  const { context, page, errors } = await openPage(browser, '/?v=1&d=0.5');
  await hydrated(page);
  // Every input says what it counts, in the page's language; the tagline
  // states the promise.
  assert.equal(await page.locator('#help-c').innerText(), 'Conversas resolvidas num mês; um número inteiro.');
  assert.equal(await page.getAttribute('#in-c', 'aria-describedby'), 'help-c');
  assert.match(await page.locator('.tagline').innerText(), /executam uma vez só/);
  await page.click('#lang-en-US');
  await waitOut(page, 'monthly_token_waste', 'R$24.75');
  assert.equal(await page.locator('#help-c').innerText(), 'Conversations resolved in a month; a whole number.');
  assert.match(await page.locator('.tagline').innerText(), /execute once/);
  assert.equal(await text(page, 'monthly_revenue'), 'R$36,000.00');
  assert.equal(await page.inputValue('#in-c'), '30,000');
  assert.equal(await page.inputValue('#in-d'), '0.5');
  assert.equal(await page.locator('h1').innerText(), 'What a call that runs twice costs');
  await page.waitForFunction(() => new URLSearchParams(location.search).get('lang') === 'en-US');
  assert.equal(await page.getAttribute('html', 'lang'), 'en-US');
  // English input: "1,234.56" is the English spelling.
  await page.fill('#in-tk', '1,234.56');
  await waitOut(page, 'monthly_revenue', 'R$37,036,800.00');
  await page.screenshot({ path: `${ARTIFACTS}/calculator-english.png`, fullPage: true });

  // The cookie keeps the choice: a bare address renders English on the
  // server, with no flicker and no hydration error.
  const again = await context.newPage();
  const errs2 = [];
  again.on('console', (m) => { if (m.type() === 'error') errs2.push(m.text()); });
  again.on('pageerror', (e) => errs2.push(e.message));
  await again.goto(`${BASE_URL}/`);
  assert.equal(await again.locator('#out-annual_token_waste').innerText(), 'R$1,782.00');
  await hydrated(again);
  assert.equal(await again.locator('#out-annual_token_waste').innerText(), 'R$1,782.00');
  assert.equal(await again.getAttribute('html', 'lang'), 'en-US');

  // And back to Portuguese.
  await again.click('#lang-pt-BR');
  await again.waitForFunction(() => document.querySelector('#out-annual_token_waste')?.textContent === 'R$ 1.782,00');
  assert.deepEqual([...errors, ...errs2], []);
  await context.close();
});

test('the switch works in place on /live, and loads the server-rendered pages again in the other language', async () => {
  // The live monitor follows a switch in place (live.js redraws it): the
  // same document, its title in English.
  const { context, page, errors } = await openPage(browser, '/live');
  await hydrated(page);
  await page.evaluate(() => { window.__sameDocument = true; });
  await page.click('#lang-en-US');
  await page.waitForFunction(() => document.querySelector('main h1')?.textContent === 'Live duplicate monitor');
  assert.match(await page.locator('.tagline').innerText(), /execute once/);
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload on /live');
  assert.equal(await page.getAttribute('html', 'lang'), 'en-US');
  // The controls follow too, and the form they send asks for English.
  assert.equal(await page.locator('#live-controls button[type="submit"]').innerText(), 'Show');
  assert.match(await page.locator('#live-controls form').innerText(), /Window/);
  assert.equal(await page.locator('#live-controls select[name="window"] option:checked').innerText(), 'last 24 h');
  assert.equal(await page.inputValue('#live-controls input[name="lang"]'), 'en-US');
  // The comparison is the server's markup alone: the switch loads it again,
  // in Portuguese, keeping its query.
  await page.goto(`${BASE_URL}/compare?s=v%3D2%26d%3D1`);
  await hydrated(page);
  assert.equal(await page.locator('main h1').first().innerText(), 'Compare scenarios');
  await Promise.all([page.waitForURL(/lang=pt-BR/), page.click('#lang-pt-BR')]);
  assert.equal(await page.locator('main h1').first().innerText(), 'Comparar cenários');
  assert.match(page.url(), /\/compare\?s=v%3D2%26d%3D1&lang=pt-BR$/);
  assert.equal(await page.getAttribute('html', 'lang'), 'pt-BR');
  assert.deepEqual(errors, []);
  await context.close();
});

test('a lang link in a fresh browser renders English on the first paint', async () => {
  // A version 1 link with a currency label: revenue and prices in dollars.
  const { context, page, errors } = await openPage(browser, '/?v=1&cur=USD&lang=en-US');
  assert.equal(await text(page, 'annual_token_waste'), '$1,782.00');
  await hydrated(page);
  assert.equal(await text(page, 'annual_token_waste'), '$1,782.00');
  assert.match(await page.locator('.field:has(#in-pi) .suffix').innerText(), /\$/);
  // The address bar moves to the version 2 spelling of the same scenario.
  await page.waitForFunction(() => location.search === '?v=2&pc=USD&rc=USD&lang=en-US');
  assert.deepEqual(errors, []);
  await context.close();
});

test('save gives a short link that never changes; editing it makes a new scenario', async () => {
  const { context, page, errors } = await openPage(browser, '/?v=1&pi=0.02&d=1.5');
  await hydrated(page);
  const name = `contrato ${Date.now()}`;
  await page.fill('#save-name', name);
  await Promise.all([page.waitForURL(/\/s\/[0-9a-f]{12}$/), page.click('#save')]);
  const link = new URL(page.url()).pathname;
  assert.match(await page.locator('#saved-banner').innerText(), new RegExp(name));
  // While unchanged, the comparison names its column by the saved scenario.
  assert.equal(await page.locator('#compare-link').getAttribute('href'), `/compare?s=${link.slice(3)}`);
  const waste = await text(page, 'monthly_token_waste');
  assert.equal(waste, 'R$ 92,25');
  await hydrated(page);
  assert.equal(await text(page, 'monthly_token_waste'), waste);
  assert.equal(new URL(page.url()).pathname, link, 'the short link stays while nothing changed');
  assert.doesNotMatch(page.url(), /pi=/, 'prices do not travel in the saved link');
  await page.screenshot({ path: `${ARTIFACTS}/saved-scenario.png`, fullPage: true });

  // Editing leaves the short link: the address bar now holds a new scenario.
  await page.fill('#in-d', '2');
  await page.waitForFunction(() => location.pathname === '/' && location.search === '?v=2&pi=0.02&d=2');
  assert.equal(await page.locator('#saved-banner').isVisible(), false, 'the banner lets go after an edit');
  assert.equal(await page.locator('#compare-link').getAttribute('href'), '/compare?s=v%3D2%26pi%3D0.02%26d%3D2');
  assert.deepEqual(errors, []);
  await context.close();

  // The saved link, in a fresh browser, still shows what was saved.
  const fresh = await openPage(browser, link);
  assert.equal(await text(fresh.page, 'monthly_token_waste'), 'R$ 92,25');
  assert.equal(await fresh.page.inputValue('#in-d'), '1,5');
  await hydrated(fresh.page);
  assert.equal(await text(fresh.page, 'monthly_token_waste'), 'R$ 92,25');
  assert.deepEqual(fresh.errors, []);
  await fresh.context.close();

  // An unknown id says so.
  const missing = await openPage(browser, '/s/000000000000');
  assert.match(await missing.page.locator('h1').innerText(), /Cenário não encontrado/);
  await missing.context.close();
});

test('compare: scenarios side by side with absolute and relative deltas, each linkable', async () => {
  const { context, page, errors } = await openPage(browser, '/');
  await hydrated(page);
  await Promise.all([page.waitForURL(/\/compare\?/), page.click('#compare-link')]);
  await hydrated(page);
  await Promise.all([page.waitForURL(/s=.*s=/), page.click('a.quick-add:has-text("0,5%")')]);
  await hydrated(page);
  const cells = page.locator('tr[data-key="monthly_token_waste"] td');
  assert.equal(await cells.count(), 2);
  assert.equal(await cells.nth(0).locator('.value').innerText(), 'R$ 148,50');
  assert.equal(await cells.nth(1).locator('.value').innerText(), 'R$ 24,75');
  assert.equal(await cells.nth(1).locator('.delta').innerText(), 'Δ −R$ 123,75 (−83,33%)');
  // The inputs that differ are rows of the table, laid out as rows.
  const inputRow = page.locator('#compare-table tr.compare-input').first();
  assert.equal(await inputRow.evaluate((e) => getComputedStyle(e).display), 'table-row');
  assert.deepEqual(await inputRow.locator('td').allInnerTexts(), ['3%', '0,5%']);
  const links = page.locator('#compare-table a.scenario-link');
  assert.equal(await links.nth(1).getAttribute('href'), '/?v=2&d=0.5');
  // The annual loss per scenario, as an image the server draws.
  await page.waitForFunction(() => document.querySelector('#chart-compare img')?.naturalWidth > 0);
  const chart = await (await fetch(BASE_URL + await page.locator('#chart-compare img').getAttribute('src'))).text();
  assert.match(chart, /R\$ 1\.782,00/);
  assert.match(chart, /R\$ 297,00/);
  await page.screenshot({ path: `${ARTIFACTS}/compare.png`, fullPage: true });

  // The compare link itself renders the same table in a fresh browser.
  const fresh = await openPage(browser, new URL(page.url()).pathname + new URL(page.url()).search);
  assert.equal(await fresh.page.locator('tr[data-key="annual_token_waste"] td').nth(1).locator('.delta').innerText(), 'Δ −R$ 1.485,00 (−83,33%)');
  await hydrated(fresh.page);
  assert.deepEqual([...errors, ...fresh.errors], []);
  await fresh.context.close();
  await context.close();
});

test('compare: pasted links that name no scenario, or one already there, get a message; what changes stands out; idem\'s savings in one line', async () => {
  const { context, page, errors } = await openPage(browser, '/compare?s=v%3D2%26d%3D3');
  await hydrated(page);
  for (const pasted of ['https://example.com/search?q=idem', '/?v=2&d=3', '/?v=2&d=0']) {
    await page.fill('#compare-add', pasted);
    await Promise.all([page.waitForURL(/compare\?/), page.click('form.compare-add button[type=submit]')]);
    await hydrated(page);
  }
  // The foreign and the repeated links were left out with a message and do not travel on.
  assert.equal(await page.locator('#compare-table a.scenario-link').count(), 2);
  // Absent is the answer (counted, not awaited: a wait would take its 30 s timeout).
  const refused = (await page.locator('#compare-refused').count()) ? await page.locator('#compare-refused').innerText() : '';
  assert.equal(refused, '', 'the last add was accepted: earlier refusals do not stick to the page');
  const hidden = await page.locator('form.compare-add input[type=hidden]').evaluateAll((xs) => xs.map((x) => x.value));
  assert.deepEqual(hidden, ['v=2&d=3', 'v=2&d=0']);
  // Unchanged outputs collapse; changed cells are marked; the savings line.
  assert.equal(await page.locator('#compare-table tr[data-key="monthly_revenue"]').count(), 0);
  assert.match(await page.locator('#compare-same summary').innerText(), /^Iguais em todos \(\d+\)$/);
  assert.equal(await page.locator('#compare-table td.changed[data-key="monthly_token_waste"]').count(), 1);
  assert.equal(await page.locator('#compare-savings').innerText(),
    'Com idem: «Cenário B» (0% de duplicatas) contra «Cenário A» (3%): economia de R$ 148,50 por mês, R$ 1.782,00 por ano.');
  // A foreign link pasted now says so instead of becoming a column.
  await page.fill('#compare-add', 'https://example.com/search?q=idem');
  await Promise.all([page.waitForURL(/example/), page.click('form.compare-add button[type=submit]')]);
  await hydrated(page);
  assert.match(await page.locator('#compare-refused').innerText(), /não é um link de cenário do idem/);
  assert.equal(await page.locator('#compare-table a.scenario-link').count(), 2);
  await page.fill('#compare-add', '/?v=2&d=0');
  await Promise.all([page.waitForURL(/compare/), page.click('form.compare-add button[type=submit]')]);
  await hydrated(page);
  assert.match(await page.locator('#compare-refused').innerText(), /já está na comparação, como «Cenário B»/);
  // The comparison itself is saved under one short link.
  await page.fill('#comparison-name', 'com e sem idem');
  await Promise.all([page.waitForURL(/\/c\/[0-9a-f]{12}$/), page.click('#save-comparison')]);
  await hydrated(page);
  assert.match(await page.locator('#comparison-banner').innerText(), /Comparação salva «com e sem idem»/);
  assert.equal(await page.locator('#compare-table a.scenario-link').count(), 2);
  assert.equal(await page.locator('#compare-savings').innerText(),
    'Com idem: «Cenário B» (0% de duplicatas) contra «Cenário A» (3%): economia de R$ 148,50 por mês, R$ 1.782,00 por ano.');
  assert.equal(await page.locator('nav.pages a[aria-current="page"]').innerText(), 'Comparar');
  const saved = new URL(page.url()).pathname;
  // In a fresh browser, in English, the link shows the same comparison.
  const fresh = await openPage(browser, `${saved}?lang=en-US`);
  await hydrated(fresh.page);
  assert.match(await fresh.page.locator('#comparison-banner').innerText(), /Saved comparison «com e sem idem»/);
  assert.match(await fresh.page.locator('#compare-savings').innerText(), /saves R\$148\.50 a month, R\$1,782\.00 a year/);
  assert.deepEqual([...errors, ...fresh.errors], []);
  await fresh.context.close();
  await context.close();
});

// A comparison started from a saved scenario (the calculator's «Comparar»
// on /s/{id}), on a desktop and on a 360 px phone.
for (const viewport of [{ width: 1280, height: 720 }, { width: 360, height: 740 }]) {
  test(`compare from a saved scenario: idem's savings one click away, another site's link refused, every cell explained, labels in view (${viewport.width} px)`, async () => {
    const r = await fetch(`${BASE_URL}/s`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ q: 'v=2&d=2.5&c=45000', name: `contrato ${viewport.width}`, lang: 'pt-BR' }),
      redirect: 'manual',
    });
    assert.equal(r.status, 303);
    const saved = new URL(r.headers.get('location'), BASE_URL).pathname;
    const id = saved.slice(3);
    const { context, page, errors } = await openAt(browser, saved, viewport);
    await hydrated(page);
    await Promise.all([page.waitForURL(/\/compare\?s=[0-9a-f]{12}$/), page.click('#compare-link')]);
    await hydrated(page);
    // The same buttons as from a link: with idem, the savings line.
    await Promise.all([page.waitForURL(/s=.*s=/), page.click('a.quick-add:has-text("idem")')]);
    await hydrated(page);
    assert.equal(await page.locator('#compare-table a.scenario-link').count(), 2);
    // 45.000 × 2,5% = 1.125 duplicates × R$ 0,165 = R$ 185,625 a month; × 12 = R$ 2.227,50.
    assert.equal(await page.locator('#compare-savings').innerText(),
      `Com idem: «Cenário B» (0% de duplicatas) contra «contrato ${viewport.width}» (2,5%): economia de R$ 185,63 por mês, R$ 2.227,50 por ano.`);
    // Another site's address of a saved scenario, even with this id, is not a column.
    for (const pasted of [`https://idem.example${saved}`, 'https://idem.example/?v=2&d=1']) {
      await page.fill('#compare-add', pasted);
      await Promise.all([page.waitForURL(/idem\.example/), page.click('form.compare-add button[type=submit]')]);
      await hydrated(page);
      assert.match(await page.locator('#compare-refused').innerText(), /não é um link de cenário do idem/);
      assert.equal(await page.locator('#compare-table a.scenario-link').count(), 2);
    }
    // This site's own address is.
    await page.fill('#compare-add', `${BASE_URL}/?v=2&d=2.5&c=45000&cs=40&pca=0.0015&dcs=90`);
    await Promise.all([page.waitForURL(/compare/), page.click('form.compare-add button[type=submit]')]);
    await hydrated(page);
    assert.equal(await page.locator('#compare-table a.scenario-link').count(), 3);
    // A scenario whose repeated call costs what a call costs shows that cost, not a dash.
    const dup = page.locator('#compare-table tr[data-key="cost_per_duplicate_call"] td');
    assert.equal(await dup.nth(0).locator('.value').innerText(), 'R$ 0,165');
    const cells = await page.locator('#compare-table td').allInnerTexts();
    for (const c of cells) assert.ok(c.trim() !== '—', `a cell says why it has no number (${cells.join(' | ')})`);
    // Scrolled sideways on a phone, the row labels stay in view.
    await page.locator('#compare-table').evaluate((t) => { t.closest('.table-scroll').scrollLeft = 10000; });
    const label = await page.locator('#compare-table tr[data-key="monthly_token_waste"] th').evaluate((th) => {
      const box = th.closest('.table-scroll').getBoundingClientRect();
      const r = th.getBoundingClientRect();
      return { left: r.left - box.left, width: r.width };
    });
    assert.ok(Math.abs(label.left) < 1, `the row label stays at the box's left edge (${JSON.stringify(label)})`);
    await page.screenshot({ path: `${ARTIFACTS}/compare-saved-${viewport.width}.png`, fullPage: true });
    assert.ok(id.length === 12);
    assert.deepEqual(errors, []);
    await context.close();
  });
}

test('the three charts are images the server draws, following the inputs, with tables', async () => {
  const { context, page, errors } = await openPage(browser, '/');
  await hydrated(page);
  for (const name of ['loss', 'breakdown', 'tornado']) {
    const fig = page.locator(`#chart-${name}`);
    const img = fig.locator('img');
    const src = `/charts/${name}.svg?v=2&lang=pt-BR`;
    assert.equal(await img.getAttribute('src'), src, name);
    // The image loaded and drew something.
    await page.waitForFunction((n) => document.querySelector(`#chart-${n} img`)?.naturalWidth > 0, name);
    assert.ok((await fig.locator('figcaption').innerText()).length > 20, `${name} caption`);
    assert.ok(await fig.locator('details table tbody tr').count() >= 4, `${name} table`);
    // Copy the image's link, download it as SVG or PNG.
    assert.equal(await fig.locator('button.copy-image').getAttribute('data-copy'), src);
    assert.equal(await fig.locator('a.download').first().getAttribute('download'), `idem-${name}.svg`);
    assert.equal(await fig.locator('a.download').nth(1).getAttribute('href'), `${src}&format=png`);
  }
  // A chart's address opened on its own shows the page's numbers.
  const annual = await page.locator('#out-annual_token_waste').innerText();
  assert.equal(annual.trim(), 'R$ 1.782,00');
  const svg = await (await fetch(`${BASE_URL}/charts/loss.svg?v=2&lang=pt-BR`)).text();
  assert.match(svg, /você: R\$ 1\.782,00 \(3,00%\)/);
  const png = await fetch(`${BASE_URL}/charts/loss.svg?v=2&lang=pt-BR&format=png`);
  assert.equal(png.headers.get('content-type'), 'image/png');
  // "Copy image link" puts the absolute address on the clipboard.
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: BASE_URL });
  await page.locator('#chart-loss button.copy-image').click();
  await page.waitForFunction(() => document.querySelector('#chart-loss button.copy-image')?.textContent === 'Link copiado');
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), `${BASE_URL}/charts/loss.svg?v=2&lang=pt-BR`);
  // Tornado: sorted by swing, the widest first.
  const first = await page.locator('#chart-tornado tbody tr').first().locator('th').textContent();
  assert.match(first, /Conversas por mês|Conversas que repetem a chamada/);
  // Editing the duplicate rate swaps the image's address within a second
  // (after the inputs are still for about 300 ms), and the new drawing
  // marks the new loss.
  const started = Date.now();
  await page.fill('#in-d', '6');
  await page.waitForFunction(() => document.querySelector('#chart-loss img')?.getAttribute('src') === '/charts/loss.svg?v=2&d=6&lang=pt-BR');
  const took = Date.now() - started;
  assert.ok(took < 1000, `the chart followed the input after ${took} ms`);
  await page.waitForFunction(() => document.querySelector('#chart-loss img')?.complete);
  const moved = await (await fetch(`${BASE_URL}/charts/loss.svg?v=2&d=6&lang=pt-BR`)).text();
  assert.match(moved, /você: R\$ 3\.564,00 \(6,00%\)/);
  await page.locator('#chart-loss').screenshot({ path: `${ARTIFACTS}/chart-loss.png` });
  assert.deepEqual(errors, []);
  await context.close();
});

test('the charts speak English on an English page', async () => {
  const { context, page, errors } = await openPage(browser, '/?v=2&d=6&lang=en-US');
  await hydrated(page);
  const src = await page.locator('#chart-loss img').getAttribute('src');
  assert.equal(src, '/charts/loss.svg?v=2&d=6&lang=en-US');
  await page.waitForFunction(() => document.querySelector('#chart-loss img')?.naturalWidth > 0);
  const svg = await (await fetch(BASE_URL + src)).text();
  assert.match(svg, /you: R\$3,564\.00 \(6\.00%\)/);
  assert.match(svg, /conversations that repeat the call/);
  assert.match(svg, /<title>Annual loss × duplicate rate<\/title>/);
  assert.equal(await page.locator('#chart-loss button.copy-image').innerText(), 'Copy image link');
  assert.deepEqual(errors, []);
  await context.close();
});

test('CSV export downloads the inputs and outputs in the page\'s dialect', async () => {
  const { context, page, errors } = await openPage(browser, '/?v=1&d=0.5');
  await hydrated(page);
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-csv')]);
  assert.match(download.suggestedFilename(), /^idem-[0-9a-f]{12}-\d{4}-\d\d-\d\d\.csv$/);
  const path = await download.path();
  const csv = await readFile(path, 'utf8');
  // pt-BR: a byte-order mark and `;`, so Excel in Portuguese opens columns.
  assert.ok(csv.startsWith('\ufeff'), 'UTF-8 byte-order mark');
  const lines = csv.slice(1).trim().split('\n');
  assert.equal(lines[0], 'section;key;label;value;formatted;unit');
  assert.ok(lines.includes('input;d;Conversas que repetem a chamada;0,5;0,5;%'), csv);
  assert.ok(lines.includes('output;monthly_token_waste;Token queimado por mês;24,75;R$ 24,75;BRL'), csv);
  assert.ok(lines.includes('output;break_even_conversations;Conversas a mais para empatar;21;21;conversas/mês'), csv);
  // Python's csv module reads it with the documented dialect.
  const py = `
import csv, sys
with open(sys.argv[1], encoding="utf-8-sig", newline="") as f:
    rows = list(csv.reader(f, delimiter=";"))
assert all(len(r) == 6 for r in rows), rows
waste = [r for r in rows if r[1] == "monthly_token_waste"][0]
assert waste[3] == "24,75" and waste[4] == "R$ 24,75", waste
print("ok")
`;
  assert.equal(execFileSync('python3', ['-c', py, path]).toString().trim(), 'ok');
  assert.deepEqual(errors, []);
  await context.close();
});

test('the page prints on A4 without its controls', async () => {
  const { context, page } = await openPage(browser, '/');
  await hydrated(page);
  await page.emulateMedia({ media: 'print' });
  assert.equal(await page.locator('section.share').isVisible(), false);
  assert.equal(await page.locator('#reset').isVisible(), false);
  assert.equal(await page.locator('#chart-loss img').isVisible(), true);
  const pdf = await page.pdf({ format: 'A4', printBackground: true });
  assert.ok(pdf.length > 10_000);
  await page.screenshot({ path: `${ARTIFACTS}/print.png`, fullPage: true });
  await context.close();
});
