// The pages as people use them: on a phone (360 and 390 px wide)
// and on a desktop, in Portuguese and English — no page wider than the
// screen, tables that scroll in their own box with a hint, the header's
// links in reach, the headline in view, an A4 estimate, and axe clean.
//
// Uses IDEM_TEST_TOKEN (scripts/test creates one) to give the monitor rows.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { BASE_URL, ARTIFACTS, launch, openAt, hydrated, axeViolations, waitOut, closeBrowser, pdfPages } from './helpers.mjs';

const TOKEN = process.env.IDEM_TEST_TOKEN;
const PHONES = [{ width: 360, height: 740 }, { width: 390, height: 844 }];
const DESKTOP = { width: 1366, height: 900 };
const LANGS = ['pt-BR', 'en-US'];
let browser;
let savedPath;
before(async () => {
  browser = await launch();
  // A saved scenario with a name (the form the calculator posts).
  const r = await fetch(`${BASE_URL}/s`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ q: 'v=2&d=2.5&ms=40&ac=90&oc=15&cr=5', name: 'contrato de março', lang: 'pt-BR' }),
    redirect: 'manual',
  });
  assert.equal(r.status, 303, 'saving a scenario redirects to its short link');
  savedPath = new URL(r.headers.get('location'), BASE_URL).pathname;
  assert.match(savedPath, /^\/s\/[0-9a-f]{12}$/);
  // Traffic for the monitor, so its per-tenant table has rows.
  if (TOKEN) {
    const run = Date.now();
    for (const ref of ['a', 'b', 'a']) {
      await fetch(`${BASE_URL}/v1/intents`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          action: 'pix.cobranca',
          payload: { cliente_id: 'c1', valor: '10.00', chave_pix_destino: 'layout@example.com', referencia_intencao: `layout-${run}-${ref}` },
        }),
      });
    }
  }
});
after(async () => { await closeBrowser(browser); });

const pages = () => [
  ['/', 'calculator'],
  [savedPath, 'saved'],
  ['/compare?s=v%3D2%26d%3D3&s=v%3D2%26d%3D0.5&s=v%3D2%26d%3D0', 'compare'],
  ['/live?window=24h', 'live'],
  // Server markup alone (no wasm): the header is the server's copy.
  ['/prices?q=claude+sonnet&back=v%3D2%26c%3D45000', 'prices'],
];

/** Waits for the wasm where the page has it. */
const ready = (page, name) => (name === 'prices' ? Promise.resolve() : hydrated(page));

for (const viewport of PHONES) {
  for (const lang of LANGS) {
    test(`${viewport.width} px, ${lang}: no page is wider than the screen; tables scroll in their own box; axe clean`, async () => {
      for (const [path, name] of pages()) {
        const sep = path.includes('?') ? '&' : '?';
        const { context, page, errors } = await openAt(browser, `${path}${sep}lang=${lang}`, viewport);
        await ready(page, name);
        const layout = await page.evaluate(() => {
          const open = [...document.querySelectorAll('details')];
          open.forEach((d) => { d.open = true; });
          const out = {
            scrollWidth: document.documentElement.scrollWidth,
            innerWidth: window.innerWidth,
            // Every header link inside the screen.
            offscreen: [...document.querySelectorAll('header.top a, a.use-model')]
              .filter((a) => a.getBoundingClientRect().right > window.innerWidth + 0.5)
              .map((a) => a.textContent),
            // Every table that is wider than its box scrolls inside it, with a hint.
            tables: [...document.querySelectorAll('table')].map((t) => {
              const box = t.closest('.table-scroll');
              const hint = box?.previousElementSibling;
              return {
                id: t.id || t.className || t.closest('[id]')?.id,
                boxed: !!box,
                overflows: box ? box.scrollWidth > box.clientWidth : false,
                hint: hint?.classList.contains('scroll-hint') ? getComputedStyle(hint).display !== 'none' : false,
              };
            }),
          };
          return out;
        });
        await page.screenshot({ path: `${ARTIFACTS}/layout-${name}-${viewport.width}-${lang}.png`, fullPage: true });
        assert.ok(layout.scrollWidth <= layout.innerWidth,
          `${name} at ${viewport.width} px (${lang}) is ${layout.scrollWidth} px wide`);
        assert.deepEqual(layout.offscreen, [], `${name}: header links past the right edge`);
        for (const t of layout.tables) {
          assert.ok(t.boxed, `${name}: table ${t.id} is not in a scroll box`);
          assert.ok(t.hint, `${name}: table ${t.id} has no visible scroll hint on a phone`);
        }
        if (name === 'compare' || name === 'live') {
          assert.ok(layout.tables.some((t) => t.overflows), `${name}: its wide table should scroll on a phone`);
        }
        assert.deepEqual(await axeViolations(page), [], `${name}: axe at ${viewport.width} px (${lang})`);
        assert.deepEqual(errors, [], `${name}: console`);
        await context.close();
      }
    });
  }
}

test('desktop, both languages: axe clean on every page', async () => {
  for (const lang of LANGS) {
    for (const [path, name] of pages()) {
      const sep = path.includes('?') ? '&' : '?';
      const { context, page, errors } = await openAt(browser, `${path}${sep}lang=${lang}`, DESKTOP);
      await ready(page, name);
      assert.deepEqual(await axeViolations(page), [], `${name}: axe on a desktop (${lang})`);
      assert.deepEqual(errors, []);
      await context.close();
    }
  }
});

/** The headline's numbers, by output key. */
const headline = (page) => page.evaluate(() => Object.fromEntries(
  [...document.querySelectorAll('#headline .headline-item')].map((e) => [e.dataset.key, e.querySelector('strong').textContent])));
const inView = (page, sel) => page.evaluate((s) => {
  const r = document.querySelector(s).getBoundingClientRect();
  return r.top >= 0 && r.bottom <= window.innerHeight;
}, sel);

test('desktop: the headline shows the reference numbers without scrolling and stays in view', async () => {
  const { context, page, errors } = await openAt(browser, '/', DESKTOP);
  assert.deepEqual(await headline(page), {
    monthly_token_waste: 'R$ 148,50',
    waste_share_of_revenue_pct: '0,41%',
    annual_token_waste: 'R$ 1.782,00',
    break_even_conversations: '124',
  }, 'the server renders it');
  await hydrated(page);
  assert.ok(await inView(page, '#headline'), 'in view on the first screen');
  // Scrolled down to the last inputs, the headline is still in view.
  await page.locator('fieldset.risk').scrollIntoViewIfNeeded();
  await page.evaluate(() => window.scrollBy(0, 300));
  assert.ok(await page.evaluate(() => window.scrollY > 0));
  assert.ok(await inView(page, '#headline'), 'in view while the inputs scroll');
  // The risk block adds the year's total; a new rate moves every number.
  await page.fill('#in-ms', '40');
  await page.fill('#in-ac', '90');
  await page.fill('#in-oc', '15');
  await page.fill('#in-cr', '5');
  await page.fill('#in-d', '1,5');
  await waitOut(page, 'monthly_token_waste', 'R$ 74,25');
  const h = await headline(page);
  assert.equal(h.monthly_token_waste, 'R$ 74,25');
  assert.equal(h.annual_token_waste, 'R$ 891,00');
  assert.equal(h.annual_total_cost, await page.locator('#out-annual_total_cost').innerText());
  assert.deepEqual(errors, []);
  await context.close();
});

test('phone, English: the headline is at the top, before the inputs', async () => {
  const { context, page, errors } = await openAt(browser, '/?lang=en-US', PHONES[1]);
  await hydrated(page);
  const h = await headline(page);
  assert.equal(h.monthly_token_waste, 'R$148.50');
  assert.equal(h.break_even_conversations, '124');
  const [head, form] = await page.evaluate(() => [
    document.querySelector('#headline').getBoundingClientRect().bottom,
    document.querySelector('form.calculator').getBoundingClientRect().top,
  ]);
  assert.ok(head <= form, 'the headline comes before the inputs');
  assert.ok(head <= PHONES[1].height, 'and within the first screen');
  assert.deepEqual(errors, []);
  await context.close();
});


for (const lang of LANGS) {
  test(`print (${lang}): an A4 estimate on one page, with its date, link and saved name first`, async () => {
    const { context, page, errors } = await openAt(browser, `${savedPath}?lang=${lang}`, DESKTOP);
    await hydrated(page);
    await page.emulateMedia({ media: 'print' });
    const meta = await page.locator('#print-meta').innerText();
    assert.ok(await page.locator('#print-meta').isVisible());
    assert.match(meta, new RegExp(`${new Date().getFullYear()}`), 'the date');
    assert.match(meta, /contrato de março/, 'the saved name');
    assert.ok(meta.includes(page.url()), `the link (${meta})`);
    for (const hidden of ['section.share', '#reset', '.help', 'nav.pages', '#model-picker']) {
      assert.equal(await page.locator(hidden).first().isVisible(), false, `${hidden} is a control`);
    }
    // The headline comes before the inputs, which print as text.
    const order = await page.evaluate(() => ['#print-meta', '#headline', 'form.calculator', '.results', 'section.charts']
      .map((s) => document.querySelector(s).getBoundingClientRect().top));
    assert.deepEqual([...order].sort((a, b) => a - b), order, 'meta, headline, inputs, results, charts');
    assert.equal(await page.locator('#in-pc').evaluate((e) => getComputedStyle(e).appearance), 'none');
    const pdf = await page.pdf({ format: 'A4', printBackground: true, path: `${ARTIFACTS}/estimate-${lang}.pdf` });
    assert.equal(pdfPages(pdf), 1, 'the estimate fits one A4 page');
    assert.deepEqual(errors, []);
    await context.close();
  });
}

test('the monitor without JavaScript says its numbers are as of page load', async () => {
  const context = await browser.newContext({ javaScriptEnabled: false });
  const page = await context.newPage();
  await page.goto(`${BASE_URL}/live?window=24h&lang=en-US`, { waitUntil: 'load' });
  assert.equal(await page.locator('#live-status').getAttribute('data-state'), 'static');
  assert.equal(await page.locator('#live-status').innerText(), 'numbers as of page load: reload to update');
  // Times stay in UTC, to the second, where no script localizes them.
  const times = await page.locator('time[data-local]').allInnerTexts();
  for (const t of times) assert.match(t, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
  await context.close();
});
