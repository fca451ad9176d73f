// The calculator against the release build: server-rendered numbers, then
// hydration, then live recomputation in the browser.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, openPage, hydrated, text, waitOut, BASE_URL, ARTIFACTS } from './helpers.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });


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
  await page.screenshot({ path: `${ARTIFACTS}/calculator-reference.png`, fullPage: true });
  assert.deepEqual(errors, []);
  await context.close();
});

test('typing recomputes in the browser, keeps the text, and puts the scenario in the address bar', async () => {
  const { context, page, errors } = await openPage(browser);
  await hydrated(page);
  let requests = 0;
  page.on('request', () => { requests += 1; });
  await page.fill('#in-d', '0,5');
  await waitOut(page, 'monthly_token_waste', 'R$ 24,75');
  assert.equal(await text(page, 'duplicated_conversations'), '150');
  assert.equal(await text(page, 'annual_token_waste'), 'R$ 297,00');
  assert.equal(requests, 0, 'no request was made to recompute');
  assert.equal(await page.inputValue('#in-d'), '0,5', 'what the person typed stays');
  await page.waitForFunction(() => location.search === '?v=1&d=0.5');

  // Brazilian and international spellings of one number give one result.
  for (const typed of ['1.234,56', '1234,56', '1234.56']) {
    await page.fill('#in-tk', typed);
    await waitOut(page, 'monthly_revenue', 'R$ 37.036.800,00');
  }
  await page.waitForFunction(() => location.search === '?v=1&tk=1234.56&d=0.5');

  // Prices per 1M tokens: the text converts, the result stays, the other
  // unit's equivalent is shown beside the price.
  await page.selectOption('#in-u', '1m');
  assert.equal(await page.inputValue('#in-pi'), '15,00');
  assert.equal(await text(page, 'cost_per_call'), 'R$ 0,165');
  assert.match(await page.locator('.field:has(#in-pi) .hint').innerText(), /= R\$ 0,015 por 1k tokens/);
  await page.screenshot({ path: `${ARTIFACTS}/calculator-edited.png`, fullPage: true });

  await page.click('#reset');
  await waitOut(page, 'monthly_token_waste', 'R$ 148,50');
  assert.equal(await page.inputValue('#in-d'), '3');
  assert.equal(await page.inputValue('#in-u'), '1k');
  await page.waitForFunction(() => location.search === '?v=1');
  assert.deepEqual(errors, []);
  await context.close();
});

test('bad and impossible input explains itself in place, never NaN or a blank page', async () => {
  const { context, page, errors } = await openPage(browser);
  await hydrated(page);
  await page.fill('#in-c', '30.0x0');
  await page.waitForSelector('.field:has(#in-c) .field-error');
  assert.match(await page.locator('.field:has(#in-c) .field-error').innerText(), /não é um número/);
  assert.match(await page.locator('.scenario-error').innerText(), /Conversas por mês/);
  assert.equal(await page.getAttribute('#in-c', 'aria-invalid'), 'true');
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
  await waitOut(first.page, 'monthly_token_waste', 'R$ 37,125');
  await first.page.click('#copy-link');
  await first.page.waitForSelector('.copy-status:has-text("Link copiado")');
  const copied = await first.page.evaluate(() => navigator.clipboard.readText());
  assert.equal(copied, first.page.url());
  assert.equal(new URL(copied).search, '?v=1&c=45000&d=0.5');
  assert.deepEqual(first.errors, []);
  await first.context.close();

  // A fresh context: no cookie, no state, only the link.
  const { context, page, errors } = await openPage(browser, new URL(copied).pathname + new URL(copied).search);
  assert.equal(await text(page, 'monthly_token_waste'), 'R$ 37,125');
  assert.equal(await text(page, 'annual_token_waste'), 'R$ 445,50');
  assert.equal(await page.inputValue('#in-c'), '45.000');
  await hydrated(page);
  assert.equal(await text(page, 'monthly_token_waste'), 'R$ 37,125');
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
