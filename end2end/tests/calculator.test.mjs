// The calculator against the release build: server-rendered numbers, then
// hydration, then live recomputation in the browser.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, openPage, hydrated, ARTIFACTS } from './helpers.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const text = (page, key) => page.locator(`#out-${key}`).innerText();

const REFERENCE = {
  cost_per_call: 'R$ 0,165',
  monthly_revenue: 'R$ 36.000,00',
  duplicated_conversations: '900',
  monthly_token_waste: 'R$ 148,50',
  waste_share_of_revenue_pct: '0,41%',
  annual_token_waste: 'R$ 1.782,00',
  break_even_conversations: '124',
};

test('the server-rendered page shows the reference scenario', async () => {
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
  await page.screenshot({ path: `${ARTIFACTS}/calculator-reference.png`, fullPage: true });
  assert.deepEqual(errors, []);
  await context.close();
});

test('editing an input recomputes in the browser, without a round trip', async () => {
  const { context, page, errors } = await openPage(browser);
  await hydrated(page);
  let requests = 0;
  page.on('request', () => { requests += 1; });
  await page.fill('#in-d', '0,5');
  await page.waitForFunction(() => document.querySelector('#out-monthly_token_waste')?.textContent === 'R$ 24,75');
  assert.equal(await text(page, 'duplicated_conversations'), '150');
  assert.equal(await text(page, 'annual_token_waste'), 'R$ 297,00');
  assert.equal(requests, 0, 'no request was made to recompute');

  // A typo gets a field-level message, never NaN or a blank page.
  await page.fill('#in-c', '30.0x0');
  await page.waitForSelector('.field-error');
  assert.match(await page.locator('.scenario-error').innerText(), /Conversas por mês/);
  assert.doesNotMatch(await page.content(), /NaN|Infinity/);
  await page.screenshot({ path: `${ARTIFACTS}/calculator-bad-input.png`, fullPage: true });

  await page.click('#reset');
  await page.waitForFunction(() => document.querySelector('#out-monthly_token_waste')?.textContent === 'R$ 148,50');
  assert.equal(await page.inputValue('#in-d'), '3');
  assert.deepEqual(errors, []);
  await context.close();
});

test('a scenario in the address bar renders on the first paint', async () => {
  const { context, page, errors } = await openPage(browser, '/?d=0,5');
  assert.equal(await text(page, 'monthly_token_waste'), 'R$ 24,75');
  await hydrated(page);
  assert.equal(await text(page, 'monthly_token_waste'), 'R$ 24,75');
  assert.deepEqual(errors, []);
  await context.close();
});
