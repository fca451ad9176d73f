// Shared set-up for the browser tests: Debian's Chromium through
// playwright-core, and a guard that fails a test on any console or page error
// (a hydration failure shows up there and nowhere else).
import { chromium } from 'playwright-core';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

export const BASE_URL = process.env.IDEM_BASE_URL ?? 'http://127.0.0.1:3000';
export const ARTIFACTS = new URL('../artifacts/', import.meta.url).pathname;
mkdirSync(ARTIFACTS, { recursive: true });

export async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
}

/** Closes the browser once a file's tests are done. Chromium sometimes
 * never answers the close (seen here about one run in three of a file that
 * opens a dozen contexts, every test already passed); the file then hung
 * until its timeout and failed. The close gets 15 s; the runner's
 * --test-force-exit ends the process after that. */
export async function closeBrowser(browser) {
  if (!browser) return;
  let timer;
  const gaveUp = new Promise((resolve) => { timer = setTimeout(() => resolve('timeout'), 15000); });
  const how = await Promise.race([browser.close().then(() => 'closed'), gaveUp]);
  clearTimeout(timer);
  if (how === 'timeout') console.error('closeBrowser: Chromium did not close within 15 s; leaving it to --test-force-exit');
}

/** A fresh page that records every console error and uncaught exception. */
export const openPage = (browser, path = '/') => openAt(browser, path, { width: 1280, height: 720 });

/** Waits until the wasm has hydrated the server-rendered page. */
export async function hydrated(page) {
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 20000 });
}

/** The text of an output of the calculator (`#out-<key>`). */
export const text = (page, key) => page.locator(`#out-${key}`).innerText();

/** Waits until an output of the calculator shows `want`. */
export const waitOut = (page, key, want) => page.waitForFunction(
  ([k, w]) => document.querySelector(`#out-${k}`)?.textContent === w, [key, want]);

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's violations on the page as it is now, one line each. */
export async function axeViolations(page) {
  await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
}

/** A fresh page at a viewport size (a phone's or a desktop's), recording
 * every console error and uncaught exception. */
export async function openAt(browser, path, viewport, options = {}) {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1, ...options });
  const page = await context.newPage();
  const errors = [];
  // A page answered with a 4xx on purpose (a link that does not read is
  // 422, with its page) is logged by Chromium as a console error of the
  // document itself; the HTTP tests assert those statuses. Every other
  // failed load still counts.
  const documents = new Set();
  page.on('response', (r) => {
    if (r.status() >= 400 && r.request().isNavigationRequest() && r.frame() === page.mainFrame()) documents.add(r.url());
  });
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (m.text().startsWith('Failed to load resource') && documents.has(m.location().url)) return;
    errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('requestfailed', (r) => {
    if (!r.url().includes('/live/events')) errors.push(`requestfailed: ${r.url()}`);
  });
  await page.goto(BASE_URL + path, { waitUntil: 'load' });
  return { context, page, errors };
}

/** How many pages a PDF has. */
export const pdfPages = (pdf) => (pdf.toString('latin1').match(/\/Type\s*\/Page[^s]/g) ?? []).length;
