// KUAE Ops page behaviour: relative times, polled panels, Plotly charts. No inline scripts.
(function () {
  "use strict";

  function ago(iso) {
    var s = (Date.now() - Date.parse(iso)) / 1000;
    var suffix = s >= 0 ? "ago" : "from now";
    s = Math.abs(s);
    if (s < 90) return Math.floor(s) + " s " + suffix;
    if (s < 5400) return Math.floor(s / 60) + " min " + suffix;
    if (s < 172800) return Math.floor(s / 3600) + " h " + suffix;
    return Math.floor(s / 86400) + " d " + suffix;
  }

  function tickRelative(root) {
    (root || document).querySelectorAll("[data-since]").forEach(function (el) {
      el.textContent = ago(el.getAttribute("data-since"));
    });
    document.querySelectorAll("[data-updated]").forEach(function (el) {
      var age = (Date.now() - Number(el.getAttribute("data-loaded") || Date.now())) / 1000;
      el.textContent = "updated " + Math.floor(age) + " s ago";
      el.classList.toggle("stale", age > 120);
    });
  }

  // Poll on an interval, slower (×6) while the tab is hidden; never overlap requests.
  function poll(fn, seconds) {
    var busy = false;
    function run() {
      var delay = (document.hidden ? seconds * 6 : seconds) * 1000;
      setTimeout(function () {
        if (busy) return run();
        busy = true;
        Promise.resolve(fn()).catch(function () {}).then(function () { busy = false; run(); });
      }, delay);
    }
    run();
  }

  function markLoaded() {
    document.querySelectorAll("[data-updated]").forEach(function (el) {
      el.setAttribute("data-loaded", String(Date.now()));
    });
  }

  function refreshPanel(el) {
    return fetch(el.getAttribute("data-refresh"), { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
      .then(function (html) { el.innerHTML = html; markLoaded(); tickRelative(el); });
  }

  function drawChart(el) {
    return fetch(el.getAttribute("data-figure"), { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
      .then(function (fig) {
        if (!window.Plotly) throw new Error("plotly not loaded");
        if (!el.dataset.drawn) el.innerHTML = "";
        el.dataset.drawn = "1";
        return window.Plotly.react(el, fig.data, fig.layout, fig.config);
      })
      .then(function () { markLoaded(); })
      .catch(function (err) {
        if (!el.dataset.drawn) el.innerHTML = '<p class="error">Chart failed to load (' + err.message + ").</p>";
      });
  }

  document.addEventListener("DOMContentLoaded", function () {
    markLoaded();
    tickRelative();
    setInterval(tickRelative, 1000);
    document.querySelectorAll("[data-refresh]").forEach(function (el) {
      if (el.hasAttribute("data-eager")) refreshPanel(el).catch(function () {});
      poll(function () { return refreshPanel(el); }, Number(el.getAttribute("data-interval") || 30));
    });
    document.querySelectorAll("[data-figure]").forEach(function (el) {
      drawChart(el);
      poll(function () { return drawChart(el); }, Number(el.getAttribute("data-interval") || 30));
    });
    document.querySelectorAll("[data-figure-json]").forEach(function (el) {
      var fig = JSON.parse(document.getElementById(el.getAttribute("data-figure-json")).textContent);
      if (window.Plotly) { el.innerHTML = ""; window.Plotly.newPlot(el, fig.data, fig.layout, fig.config); }
    });
    document.querySelectorAll("[data-autosubmit]").forEach(function (el) {
      el.addEventListener("change", function () { el.form.submit(); });
    });
  });
})();
