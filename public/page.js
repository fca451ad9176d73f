// The charts' "copy image link" buttons, on every page that shows charts
// (calculator, saved scenarios, comparison, monitor). One delegated
// listener, so buttons the pages swap in later work too; kept out of the
// wasm, which carries no chart code. The button's label says what happened
// for two seconds; without a clipboard the link is selected in a prompt.
document.addEventListener('click', (e) => {
  const button = e.target.closest && e.target.closest('button[data-copy]');
  if (!button) return;
  const url = new URL(button.dataset.copy, location.href).href;
  const label = button.textContent;
  const done = (text) => {
    button.textContent = text;
    button.classList.add('copied');
    setTimeout(() => { button.textContent = label; button.classList.remove('copied'); }, 2000);
  };
  const en = document.documentElement.lang === 'en-US';
  if (navigator.clipboard && navigator.clipboard.writeText) {
    navigator.clipboard.writeText(url).then(
      () => done(en ? 'Link copied' : 'Link copiado'),
      () => window.prompt(en ? 'Image link' : 'Link da imagem', url),
    );
  } else {
    window.prompt(en ? 'Image link' : 'Link da imagem', url);
  }
});
