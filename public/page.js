// Small page behaviour kept out of the wasm (which carries no chart code and
// has no room in its size budget for this):
// - copy buttons: the charts' image links, the live monitor's keys and
//   references;
// - the line a printed estimate or comparison starts with: when and from
//   which link;
// - the sticky headline's height, for the scroll padding that keeps focus
//   in view.

// One delegated listener, so buttons the pages swap in later work too (the
// live monitor replaces its list every few seconds). `data-copy` holds a
// link (copied as an absolute URL); `data-copy-text` holds text copied as
// it is (a key, a reference). The button's label says what happened for
// two seconds; without a clipboard the text is selected in a prompt.
document.addEventListener('click', (e) => {
  const button = e.target.closest && e.target.closest('button[data-copy], button[data-copy-text]');
  if (!button) return;
  const en = document.documentElement.lang === 'en-US';
  const link = button.dataset.copy !== undefined;
  const text = link ? new URL(button.dataset.copy, location.href).href : button.dataset.copyText;
  const label = button.textContent;
  const done = (said) => {
    button.textContent = said;
    button.classList.add('copied');
    setTimeout(() => { button.textContent = label; button.classList.remove('copied'); }, 2000);
  };
  const copied = button.dataset.done || (link ? (en ? 'Link copied' : 'Link copiado') : (en ? 'Copied' : 'Copiado'));
  const ask = () => window.prompt(link ? (en ? 'Image link' : 'Link da imagem') : (en ? 'Copy' : 'Copiar'), text);
  if (navigator.clipboard && navigator.clipboard.writeText) {
    navigator.clipboard.writeText(text).then(() => done(copied), ask);
  } else {
    ask();
  }
});

// The printed estimate's first line: the date and time it was printed and
// the link that reproduces it (the address bar follows every edit), with
// the saved scenario's name while its short link is unchanged. Written when
// the page loads and again just before printing. `#print-meta` is set as
// inner HTML by the page, so hydration leaves what is written here alone.
function printMeta() {
  const box = document.getElementById('print-meta');
  if (!box) return;
  const lang = document.documentElement.lang || 'pt-BR';
  const en = lang === 'en-US';
  const when = new Date().toLocaleString(lang, { dateStyle: 'long', timeStyle: 'short' });
  const comparison = box.dataset.kind === 'comparison';
  const kind = comparison ? (en ? 'Comparison of' : 'Comparação de') : (en ? 'Estimate of' : 'Estimativa de');
  const parts = [`${kind} ${when}`];
  const saved = location.pathname.match(/^\/s\/([^/]+)$/);
  if (saved) {
    const data = document.querySelector(`#page-data span[data-id="${CSS.escape(saved[1])}"]`);
    const name = data && data.dataset.name;
    if (name) parts.push(`${en ? 'saved scenario' : 'cenário salvo'} «${name}»`);
  }
  box.textContent = '';
  box.append(parts.join(' · ') + ' · ');
  const link = document.createElement('span');
  link.className = 'print-link';
  link.textContent = location.href;
  box.append(link);
  // A comparison's columns, each with the whole link that reopens it.
  for (const el of document.querySelectorAll('.print-href[data-href]')) {
    el.textContent = new URL(el.dataset.href, location.href).href;
  }
}
printMeta();
window.addEventListener('beforeprint', printMeta);
window.matchMedia('print').addEventListener('change', (m) => { if (m.matches) printMeta(); });

// The sticky headline's height, for the page's scroll padding: what takes
// the focus (a field, a link) scrolls clear of it rather than under it.
function trackHeadline() {
  const head = document.getElementById('headline');
  if (!head || typeof ResizeObserver !== 'function') return;
  const set = () => document.documentElement.style.setProperty('--headline-h', `${head.offsetHeight}px`);
  new ResizeObserver(set).observe(head);
  set();
}
if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', trackHeadline);
else trackHeadline();
