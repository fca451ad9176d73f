// Time from a keystroke to updated results in the calculator, in Chromium
// with the CPU throttled 4x (a mid-range phone), and the wasm's bytes on
// the wire. The goals: under 300 ms and under 200 KB.
//
//   node bench/keystroke.mjs [base URL, default http://127.0.0.1:3000] [keystrokes, default 30]
//
// Needs a server on the release build (scripts/serve builds and starts one)
// and end2end's node_modules (scripts/setup --browser). Each
// keystroke types one character into the duplicate rate and waits until the
// monthly waste shows the new value; the figure is the time from the key
// event to that paint-ready DOM change, measured inside the page.
import { createRequire } from 'node:module';
import http from 'node:http';
const require = createRequire(new URL('../end2end/package.json', import.meta.url));
const { chromium } = require('playwright-core');

const base = process.argv[2] ?? 'http://127.0.0.1:3000';
const n = Number(process.argv[3] ?? 30);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu'],
});

// The wasm's bytes as the server sends them (a raw request: fetch would
// decode the body).
const rawBytes = (encoding) => new Promise((resolve, reject) => {
  const u = new URL(`${base}/pkg/idem.wasm`);
  http.get({ host: u.hostname, port: u.port, path: u.pathname, headers: { 'accept-encoding': encoding } }, (res) => {
    let bytes = 0;
    res.on('data', (c) => { bytes += c.length; });
    res.on('end', () => resolve({ encoding: res.headers['content-encoding'] ?? 'identity', bytes }));
  }).on('error', reject);
});

const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
const page = await context.newPage();
const cdp = await context.newCDPSession(page);
await cdp.send('Emulation.setCPUThrottlingRate', { rate: 4 });
const t0 = Date.now();
await page.goto(`${base}/`, { waitUntil: 'load' });
await page.waitForSelector('body[data-hydrated="true"]', { timeout: 60000 });
const hydratedMs = Date.now() - t0;
// The clock starts at the key's keydown and stops at the first change of
// the monthly waste's text, both inside the page.
// (The results are re-rendered as a whole, so the watch is on their section.)
await page.evaluate(() => {
  const text = () => document.querySelector('#out-monthly_token_waste')?.textContent;
  new MutationObserver(() => {
    if (window.__start !== undefined && window.__took === null && text() !== window.__before) {
      window.__took = performance.now() - window.__start;
    }
  }).observe(document.querySelector('section.results'), { childList: true, characterData: true, subtree: true });
  document.querySelector('#in-d').addEventListener('keydown', () => {
    window.__before = text();
    window.__start = performance.now();
    window.__took = null;
  }, true);
});
const times = [];
for (let i = 0; i < n; i++) {
  await page.click('#in-d', { clickCount: 3 });
  // Alternate between two rates, so every keystroke changes the result.
  await page.keyboard.press(i % 2 ? '4' : '2');
  await page.waitForFunction(() => window.__took !== null, null, { timeout: 15000 });
  times.push(await page.evaluate(() => window.__took));
}
times.sort((a, b) => a - b);
const q = (p) => times[Math.min(times.length - 1, Math.floor(p * times.length))];
console.log(JSON.stringify({
  cpu_throttle: 4,
  keystrokes: n,
  keystroke_to_result_ms: { p50: +q(0.5).toFixed(1), p90: +q(0.9).toFixed(1), max: +times.at(-1).toFixed(1) },
  load_to_hydrated_ms: hydratedMs,
  wasm_on_the_wire: [await rawBytes('br'), await rawBytes('gzip'), await rawBytes('identity')],
}, null, 2));
await browser.close();
