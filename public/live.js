// The live monitor's feed (idem): keeps the server-rendered numbers current.
//
// Each element with a data-feed attribute subscribes to that server-sent
// events URL and swaps in the markup of every "snapshot" event. The status
// line it names (data-status) says whether the feed is live, stale (no word
// for over 2 s) or disconnected, and when it reconnects. Where EventSource
// is missing, or the stream keeps failing before its first message (a proxy
// that buffers, say), it polls /live/fragment every 2 s instead. When the
// page's language changes in place, the feed restarts in that language.
//
// The markup comes from the server, which escapes everything it renders;
// this script only moves it. It is plain JavaScript rather than Rust in the
// wasm because the wasm's size budget has no room left for a feed client.
(function () {
  "use strict";
  // The server sends at least every second (a heartbeat when nothing
  // changed): two seconds of silence means it is gone or stuck.
  var STALE_MS = 2000;
  var POLL_MS = 2000;

  /** "pt" or "en": the page's language, as <html lang> says now. */
  function lang() {
    return /^en/.test(document.documentElement.getAttribute("lang") || "") ? "en" : "pt";
  }

  /** Texts rendered with both languages (data-pt, data-en) follow it, and
   *  so do the forms' hidden lang fields, so a form sent after an in-place
   *  switch answers in the language on screen. */
  function relabel() {
    var els = document.querySelectorAll("[data-pt][data-en]");
    for (var i = 0; i < els.length; i++) els[i].textContent = els[i].getAttribute("data-" + lang());
    var tag = document.documentElement.getAttribute("lang") || "";
    var fields = document.querySelectorAll('form input[type="hidden"][name="lang"]');
    for (var j = 0; j < fields.length; j++) if (tag) fields[j].value = tag;
  }

  /** The reconcile form keeps what was typed when the server refuses it:
   *  the refusal is a redirect back to the action's page (so a reload never
   *  posts again), and the typed text waits in this tab's session storage
   *  until then. It never leaves the browser, and a recorded outcome
   *  clears it. */
  function keepTyped() {
    var form = document.getElementById("reconcile-form");
    var slot = "idem.reconcile:" + location.pathname;
    var store;
    try { store = window.sessionStorage; } catch (e) { return; }
    if (!store) return;
    var refused = document.querySelector("#action-notice.field-error");
    var kept = store.getItem(slot);
    store.removeItem(slot);
    if (form && refused && kept) {
      try {
        var v = JSON.parse(kept);
        var radio = form.querySelector('input[name="outcome"][value="' + (v.outcome === "failed" ? "failed" : "completed") + '"]');
        if (v.outcome && radio) radio.checked = true;
        if (typeof v.response === "string") form.elements.response.value = v.response;
        if (typeof v.error === "string") form.elements.error.value = v.error;
        if (form.elements.retryable) form.elements.retryable.checked = v.retryable === true;
      } catch (e) { /* a value this script did not write: ignore it */ }
    }
    if (!form) return;
    form.addEventListener("submit", function () {
      var checked = form.querySelector('input[name="outcome"]:checked');
      store.setItem(slot, JSON.stringify({
        outcome: checked ? checked.value : "",
        response: form.elements.response.value,
        error: form.elements.error.value,
        retryable: form.elements.retryable ? form.elements.retryable.checked : false,
      }));
    });
  }

  /** Instants (time[data-local], written in UTC by the server) in the
   *  reader's time zone, to the second; the UTC text stays in the title. */
  function localize(scope) {
    var els = scope.querySelectorAll("time[data-local]");
    var tag = document.documentElement.getAttribute("lang") || undefined;
    for (var i = 0; i < els.length; i++) {
      var d = new Date(els[i].getAttribute("datetime"));
      if (isNaN(d.getTime())) continue;
      var text = d.toLocaleString(tag, {
        year: "numeric", month: "2-digit", day: "2-digit",
        hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short",
      });
      if (els[i].textContent !== text) els[i].textContent = text;
    }
  }

  function start(root) {
    if (!root.getAttribute("data-feed") || root.getAttribute("data-live-started")) return;
    root.setAttribute("data-live-started", "true");
    var status = document.getElementById(root.getAttribute("data-status") || "");
    var state = "connecting";
    var last = Date.now();
    var opened = false;
    var failures = 0;
    var es = null;
    var timer = null;

    function show(s) {
      state = s;
      // Numbers that may be old are dimmed until fresh ones arrive.
      if (s === "stale" || s === "disconnected") root.setAttribute("data-stale", "true");
      else root.removeAttribute("data-stale");
      if (!status) return;
      status.setAttribute("data-state", s);
      var text = status.getAttribute("data-" + lang() + "-" + s) || s;
      if (status.textContent !== text) status.textContent = text;
    }

    function feed() {
      var lang = document.documentElement.getAttribute("lang") || "";
      var url = root.getAttribute("data-feed");
      return lang ? url.replace(/([?&]lang=)[^&]*/, "$1" + encodeURIComponent(lang)) : url;
    }

    // The markup last swapped in, as the server sent it: the page's copy
    // differs once its times are localized.
    var shown = null;
    function fresh(html) {
      last = Date.now();
      root.setAttribute("data-updated", String(last));
      if (html !== null && shown !== html) {
        root.innerHTML = html;
        shown = html;
        localize(root);
      }
    }

    function stop() {
      if (es) es.close();
      es = null;
      if (timer) clearInterval(timer);
      timer = null;
    }

    function poll() {
      stop();
      show("polling");
      var tick = function () {
        fetch(feed().replace("/live/events", "/live/fragment"), { credentials: "same-origin", cache: "no-store" })
          .then(function (r) {
            if (!r.ok) throw new Error(String(r.status));
            return r.text();
          })
          .then(function (html) {
            fresh(html);
            show("polling");
          })
          .catch(function () {
            show("disconnected");
          });
      };
      tick();
      timer = setInterval(tick, POLL_MS);
    }

    function stream() {
      stop();
      es = new EventSource(feed(), { withCredentials: true });
      es.addEventListener("open", function () {
        // Open again after a drop: say so until the next drop.
        if (opened) show("reconnected");
        opened = true;
        failures = 0;
      });
      es.addEventListener("snapshot", function (e) {
        fresh(e.data);
        if (state !== "reconnected") show("live");
      });
      es.addEventListener("heartbeat", function () {
        fresh(null);
        if (state !== "reconnected") show("live");
      });
      es.addEventListener("trouble", function () {
        show("stale");
      });
      es.addEventListener("error", function () {
        failures += 1;
        show("disconnected");
        // Never open after three tries: this path does not carry a
        // stream; poll instead. (EventSource retries by itself.)
        if (!opened && failures >= 3) poll();
      });
    }

    setInterval(function () {
      if ((state === "live" || state === "reconnected") && Date.now() - last > STALE_MS) show("stale");
    }, 250);

    // An in-place language switch: restart the feed in the new language,
    // and say the current state in it.
    new MutationObserver(function () {
      show(state);
      if (es) stream();
    }).observe(document.documentElement, { attributes: true, attributeFilter: ["lang"] });

    show("connecting");
    if (typeof window.EventSource === "function") stream();
    else poll();
  }

  function controls() {
    // The window and tenant selects apply at once; the button stays for
    // keyboards and for pages without this script.
    var form = document.querySelector("#live-controls form");
    if (form) form.addEventListener("change", function () { form.submit(); });
  }

  function init() {
    var roots = document.querySelectorAll("[data-feed]");
    for (var i = 0; i < roots.length; i++) start(roots[i]);
    localize(document);
    controls();
    keepTyped();
    new MutationObserver(function () { relabel(); localize(document); })
      .observe(document.documentElement, { attributes: true, attributeFilter: ["lang"] });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
