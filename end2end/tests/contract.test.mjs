// The calculator for any contract, in the browser: a contract in pounds
// with revenue in reais and the risk block (the issue's), its rate's date
// typed in each language, a currency symbol typed in a price, paper (the
// estimate and a comparison of three, printed to PDF and counted), a
// comparison whose every row carries its unit, the focus never under the
// sticky headline, and /compare at 360 px without a word broken in two.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { BASE_URL, ARTIFACTS, launch, openAt, hydrated, axeViolations, closeBrowser, pdfPages } from './helpers.mjs';

const { contracts } = JSON.parse(readFileSync(new URL('../../testkit/fixtures/contracts.json', import.meta.url), 'utf8'));
const POUND = contracts.find((c) => c.link.includes('pc=GBP'));
const DESKTOP = { width: 1366, height: 900 };
const PHONE = { width: 360, height: 740 };
const LANGS = ['pt-BR', 'en-US'];
/** How many pages a comparison of three prints on (A4 portrait). */
const COMPARISON_OF_THREE_PAGES = 1;


let browser;
let savedId;
before(async () => {
  browser = await launch();
  const r = await fetch(`${BASE_URL}/s`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ q: POUND.link, name: 'libras de dezembro', lang: 'pt-BR' }),
    redirect: 'manual',
  });
  assert.equal(r.status, 303);
  savedId = new URL(r.headers.get('location'), BASE_URL).pathname.split('/').pop();
});
after(async () => { await closeBrowser(browser); });

/** Replaces a field's text as a person types it. */
async function type(page, selector, text) {
  await page.fill(selector, '');
  await page.type(selector, text);
}

/** The finance lead's three unseen contracts: dinars, yen from euros, UF. */
const UNSEEN = ['rc=BHD', 'rc=JPY', 'rc=CLF'].map((k) => contracts.find((c) => c.link.includes(k) && c.link.includes('pd=')));
const TABLET = { width: 820, height: 1180 };
const RISK_KEYS = ['ms', 'ac', 'oc', 'cr'];
/** The link with the risk block filled in (in the contract's own amounts), or emptied. */
function withRisk(link, on) {
  const kept = link.split('&').filter((kv) => !RISK_KEYS.includes(kv.split('=')[0]));
  if (!on) return kept.join('&');
  if (link.includes('ms=')) return link;
  return [...kept, 'ms=30', 'ac=12000', 'oc=450', 'cr=2'].join('&');
}

// 36 prints: three contracts × two languages × desktop, tablet and phone ×
// with and without the risk block, each on one A4 page.
test('print: the three unseen contracts, in both languages, on every screen, with and without risk, are one A4 page each', async () => {
  assert.equal(UNSEEN.filter(Boolean).length, 3);
  let printed = 0;
  for (const c of UNSEEN) {
    for (const lang of LANGS) {
      for (const [screen, viewport] of [['desktop', DESKTOP], ['tablet', TABLET], ['phone', PHONE]]) {
        for (const risk of [true, false]) {
          const link = withRisk(c.link, risk);
          const { context, page, errors } = await openAt(browser, `/?${link}&lang=${lang}`, viewport);
          await hydrated(page);
          await page.emulateMedia({ media: 'print' });
          const name = `${c.currency}-${lang}-${screen}-${risk ? 'risk' : 'plain'}`;
          const pdf = await page.pdf({ format: 'A4', printBackground: true, path: `${ARTIFACTS}/unseen-${name}.pdf` });
          assert.equal(pdfPages(pdf), 1, `${name}: one A4 page`);
          assert.deepEqual(errors, [], name);
          await context.close();
          printed += 1;
        }
      }
    }
  }
  assert.equal(printed, 36);
});

for (const lang of LANGS) {
  test(`print (${lang}): the pound contract with the risk block is one A4 page, charts included`, async () => {
    const { context, page, errors } = await openAt(browser, `/?${POUND.link}&lang=${lang}`, DESKTOP);
    await hydrated(page);
    await page.emulateMedia({ media: 'print' });
    // The rate and its date are on the paper, beside the results.
    const rate = await page.locator('#results-fx').innerText();
    assert.match(rate, lang === 'pt-BR' ? /£ 1 = R\$ 7,35 em 04\/12\/2026/ : /£1 = R\$7\.35 on 4 Dec 2026/);
    assert.ok(await page.locator('section.charts img').first().isVisible(), 'the charts print');
    const pdf = await page.pdf({ format: 'A4', printBackground: true, path: `${ARTIFACTS}/pound-estimate-${lang}.pdf` });
    assert.equal(pdfPages(pdf), 1, 'one A4 page');
    assert.deepEqual(errors, []);
    await context.close();
  });

  test(`print (${lang}): a comparison of three names each scenario with its link and the date`, async () => {
    const path = `/compare?s=${savedId}&s=${encodeURIComponent('v=2&d=3')}&s=${encodeURIComponent('v=2&d=0.5&pi=0.0149')}&lang=${lang}`;
    const { context, page, errors } = await openAt(browser, path, DESKTOP);
    await page.emulateMedia({ media: 'print' });
    assert.ok(await page.locator('#print-meta').isVisible());
    const meta = await page.locator('#print-meta').innerText();
    assert.match(meta, new RegExp(String(new Date().getFullYear())), 'the date');
    assert.ok(meta.includes(page.url()), 'the comparison\'s own link');
    const refs = await page.locator('#print-refs li').allInnerTexts();
    assert.equal(refs.length, 3);
    assert.match(refs[0], new RegExp(`libras de dezembro — ${BASE_URL}/s/${savedId}`));
    const letter = lang === 'pt-BR' ? 'Cenário' : 'Scenario';
    assert.match(refs[1], new RegExp(`${letter} B — ${BASE_URL}/\\?v=2&d=3`));
    assert.match(refs[2], new RegExp(`${letter} C — ${BASE_URL}/\\?v=2&d=0\\.5`));
    const pdf = await page.pdf({ format: 'A4', printBackground: true, path: `${ARTIFACTS}/comparison-${lang}.pdf` });
    assert.equal(pdfPages(pdf), COMPARISON_OF_THREE_PAGES, 'the pages a comparison of three needs');
    assert.deepEqual(errors, []);
    await context.close();
  });
}

for (const lang of LANGS) {
  test(`print (${lang}): three contracts in three currencies, one at risk, compare on one A4 page`, async () => {
    const names = [
      'dollars per 1M, 45% cached, revenue in rupees at a dated rate',
      'all in Omani rials, three decimals, at risk',
      'all in won, no decimals, cached and repeated calls half cached',
    ];
    const links = names.map((n) => contracts.find((c) => c.name === n).link);
    const path = `/compare?${links.map((l) => `s=${encodeURIComponent(l)}`).join('&')}&lang=${lang}`;
    const { context, page, errors } = await openAt(browser, path, DESKTOP);
    // Counts and shares compare across currencies, with their unit; only
    // amounts in two currencies have no difference.
    const dups = await page.locator('tr[data-key="duplicated_conversations"]').innerText();
    assert.match(dups, lang === 'pt-BR' ? /313 conversas\/mês/ : /313 conversations\/month/, dups);
    assert.doesNotMatch(dups, /outra moeda|other currency/, dups);
    assert.match(await page.locator('tr[data-key="monthly_token_waste"]').innerText(), lang === 'pt-BR' ? /outra moeda/ : /other currency/);
    const rate = await page.locator('tr[data-field="px"]').innerText();
    assert.match(rate, lang === 'pt-BR' ? /US\$ 1 = ₹ 84,37 em 01\/12\/2026/ : /\$1 = ₹84\.37 on 1 Dec 2026/, rate);
    await page.emulateMedia({ media: 'print' });
    const pdf = await page.pdf({ format: 'A4', printBackground: true, path: `${ARTIFACTS}/comparison-three-currencies-${lang}.pdf` });
    assert.equal(pdfPages(pdf), 1, 'one A4 page');
    assert.deepEqual(errors, []);
    await context.close();
  });
}

test('a typed date reads in the page\'s language; one that reads two ways is refused with both', async () => {
  for (const lang of LANGS) {
    const { context, page, errors } = await openAt(browser, `/?v=2&pc=GBP&px=7.35&lang=${lang}`, DESKTOP);
    await hydrated(page);
    await type(page, '#in-pd', '04/12/2026');
    if (lang === 'pt-BR') {
      assert.equal(await page.locator('#err-pd').isVisible(), false);
      assert.match(await page.locator('#fx-echo').innerText(), /em 04\/12\/2026/);
      assert.match(await page.locator('#results-fx').innerText(), /em 04\/12\/2026/);
    } else {
      assert.ok(await page.locator('#err-pd').isVisible());
      assert.match(await page.locator('#err-pd').innerText(), /4 December 2026 or 12 April 2026/);
      assert.match(await page.locator('#results-fx').innerText(), /\(undated\)/);
      await type(page, '#in-pd', '4 Dec 2026');
      assert.equal(await page.locator('#err-pd').isVisible(), false);
      assert.match(await page.locator('#results-fx').innerText(), /on 4 Dec 2026/);
      // The link carries the day itself, whatever the page's language.
      await page.waitForFunction(() => location.search.includes('pd=2026-12-04'));
    }
    await type(page, '#in-pd', '31/02/2026');
    assert.ok(await page.locator('#err-pd').isVisible(), 'no such day');
    assert.ok(await page.locator('#out-monthly_token_waste').innerText() !== '—', 'no figure waits on a date');
    assert.deepEqual(errors, [], lang);
    await context.close();
  }
});

test('a currency symbol typed in a price is read when it is the block\'s, refused naming it when not', async () => {
  const { context, page, errors } = await openAt(browser, `/?${POUND.link}`, DESKTOP);
  await hydrated(page);
  const before = await page.locator('#out-monthly_token_waste').innerText();
  await type(page, '#in-pi', '£2,40');
  assert.equal(await page.locator('#in-pi[aria-invalid="true"]').count(), 0);
  assert.equal(await page.locator('#out-monthly_token_waste').innerText(), before);
  await type(page, '#in-pi', 'US$ 3');
  const why = await page.locator('#in-pi >> xpath=ancestor::div[contains(@class,"field")]//p[contains(@class,"field-error")]').innerText();
  assert.match(why, /Libra esterlina \(GBP\)/);
  assert.doesNotMatch(why, /vírgula/);
  // Revenue does not wait on a price.
  assert.equal(await page.locator('#out-monthly_revenue').innerText(), 'R$ 156.000,00');
  assert.deepEqual(errors, []);
  await context.close();
});

test('every comparison row carries its unit and currency; deltas keep their precision', async () => {
  for (const lang of LANGS) {
    const path = `/compare?s=${encodeURIComponent('v=2')}&s=${encodeURIComponent(POUND.link)}&s=${encodeURIComponent('v=2&pi=0.0149&cs=20')}&lang=${lang}`;
    const { context, page, errors } = await openAt(browser, path, DESKTOP);
    const rows = await page.$$eval('#compare-table tr.compare-input', (trs) => trs.map((tr) => ({
      field: tr.dataset.field,
      cells: [...tr.querySelectorAll('td')].map((td) => td.textContent.trim()),
    })));
    assert.ok(rows.length >= 8, `${rows.length} input rows`);
    const unit = {
      c: lang === 'pt-BR' ? /por mês$/ : /a month$/,
      ti: /tokens$/, to: /tokens$/, cs: /%$/, d: /%$/, dcs: /%$/, ms: /%$/, cr: /%$/,
      cl: lang === 'pt-BR' ? /chamadas?$/ : /calls?$/,
      pi: /(R\$|£).*(1k|1M) tokens$/, pca: /(R\$|£).*(1k|1M) tokens$/, po: /(R\$|£).*(1k|1M) tokens$/,
      px: /£ ?1 = R\$/, tk: /^R\$/, ac: /^R\$/, oc: /^R\$/,
    };
    for (const r of rows) {
      for (const cell of r.cells) {
        if (cell === '—') continue;
        assert.match(cell, unit[r.field], `${lang}: ${r.field} «${cell}»`);
      }
    }
    // (8.000 × (80% × 0,0149 + 20% × 0) + 600 × 0,075) / 1k = 0,14036:
    // 0,02464 less a call, kept to four places.
    const delta = await page.locator('#compare-table td[data-key="cost_per_call"] .delta').last().innerText();
    assert.match(delta, lang === 'pt-BR' ? /−R\$ 0,0246/ : /−R\$0\.0246/);
    // The chart says which total it compares, the same for every column.
    const title = await page.locator('#chart-compare h3').innerText();
    assert.match(title, lang === 'pt-BR' ? /Desperdício anual de tokens/ : /Annual token waste/);
    assert.deepEqual(await axeViolations(page), [], lang);
    assert.deepEqual(errors, [], lang);
    await context.close();
  }
});

test('a focused element is never hidden under the sticky headline', async () => {
  const { context, page, errors } = await openAt(browser, `/?${POUND.link}`, DESKTOP);
  await hydrated(page);
  // Scrolled past it, then reached with the keyboard.
  await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
  await page.locator('#in-po').focus();
  for (let i = 0; i < 12; i++) {
    if (await page.evaluate(() => document.activeElement?.id === 'model-picker')) break;
    await page.keyboard.press('Tab');
  }
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'model-picker');
  const [focusTop, headBottom] = await page.evaluate(() => [
    document.activeElement.getBoundingClientRect().top,
    document.querySelector('#headline').getBoundingClientRect().bottom,
  ]);
  assert.ok(focusTop >= headBottom, `the focused link (top ${focusTop}) is under the headline (bottom ${headBottom})`);
  // From below too: Shift+Tab back up the fields.
  await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
  await page.locator('#in-tk').focus();
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('Shift+Tab');
  const [top2, head2] = await page.evaluate(() => [
    document.activeElement.getBoundingClientRect().top,
    document.querySelector('#headline').getBoundingClientRect().bottom,
  ]);
  assert.ok(top2 >= head2, `${top2} under ${head2}`);
  assert.deepEqual(errors, []);
  await context.close();
});

test('360 px: no word on /compare is broken in two', async () => {
  for (const lang of LANGS) {
    const path = `/compare?s=${encodeURIComponent('v=2')}&s=${encodeURIComponent(POUND.link)}&s=${encodeURIComponent('v=2&d=0')}&lang=${lang}`;
    const { context, page, errors } = await openAt(browser, path, PHONE);
    const broken = await page.evaluate(() => {
      const out = [];
      for (const el of document.querySelectorAll('#compare-table th, #compare-table td, #compare-same th, #compare-same td')) {
        const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
          const t = n.textContent;
          let prevTop = null;
          for (let i = 0; i < t.length; i++) {
            const r = document.createRange();
            r.setStart(n, i);
            r.setEnd(n, i + 1);
            const rect = r.getClientRects()[0];
            if (!rect) continue;
            // A new line that starts inside a word: its previous character
            // is no space and no hyphen.
            if (prevTop !== null && rect.top > prevTop + 2 && i > 0 && !/[\s\-–—/]/.test(t[i - 1]) && !/\s/.test(t[i])) {
              out.push(`${t.slice(Math.max(0, i - 12), i)}|${t.slice(i, i + 12)}`);
            }
            prevTop = rect.top;
          }
        }
      }
      return out;
    });
    assert.deepEqual(broken, [], `${lang}: words broken at 360 px`);
    assert.deepEqual(errors, [], lang);
    await context.close();
  }
});
