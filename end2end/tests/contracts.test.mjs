// The corpus of hand-computed contracts (testkit/fixtures/contracts.json)
// on the page, in both languages: the server's HTML first, then the same
// figures once the wasm has taken over. The CLI and the CSV check the same
// contracts (server/tests/it/cli.rs, server/tests/it/http.rs).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { launch, openPage, hydrated, text, closeBrowser } from './helpers.mjs';

const { contracts } = JSON.parse(readFileSync(new URL('../../testkit/fixtures/contracts.json', import.meta.url), 'utf8'));

/** A pt-BR figure as the English page writes it: separators swapped, the
 * symbol against the number ("R$ 1.782,00" → "R$1,782.00", "US$ 0,02" →
 * "$0.02"). */
function inEnglish(pt) {
  const swapped = pt.replace(/[.,]/g, (c) => (c === '.' ? ',' : '.'));
  const m = swapped.match(/^(\S+) (.+)$/);
  if (!m) return swapped;
  return (m[1] === 'US$' ? '$' : m[1]) + m[2];
}

let browser;
before(async () => { browser = await launch(); });
after(async () => { await closeBrowser(browser); });

test('every contract of the corpus shows its hand-computed figures, in pt-BR and in English', async () => {
  assert.ok(contracts.length >= 10);
  for (const c of contracts) {
    for (const lang of ['pt-BR', 'en-US']) {
      const { context, page, errors } = await openPage(browser, `/?${c.link}&lang=${lang}`);
      const want = Object.fromEntries(Object.entries(c.shown_pt_BR)
        .map(([k, v]) => [k, lang === 'pt-BR' ? v : (c.shown_en_US?.[k] ?? inEnglish(v))]));
      for (const [key, value] of Object.entries(want)) {
        assert.equal(await text(page, key), value, `${c.name} (${lang}, server): ${key}`);
      }
      await hydrated(page);
      for (const [key, value] of Object.entries(want)) {
        assert.equal(await text(page, key), value, `${c.name} (${lang}, browser): ${key}`);
      }
      // Nothing the corpus does not know about: no output is left unchecked
      // but the risk rows that total what is checked.
      const keys = await page.$$eval('.outputs [data-key]', (els) => els.map((e) => e.dataset.key));
      const unchecked = keys.filter((k) => !(k in want) && !['monthly_total_risk', 'annual_total_risk'].includes(k));
      assert.deepEqual(unchecked, [], `${c.name} (${lang})`);
      assert.deepEqual(errors, [], `${c.name} (${lang})`);
      await context.close();
    }
  }
});
