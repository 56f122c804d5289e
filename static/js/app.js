// KUAE Ops page behaviour: relative times, polled panels, Plotly charts. No inline scripts.
(function () {
  "use strict";

  // The page's language (docs/pages.md, Language): Django's JavaScript catalogue (/jsi18n/,
  // loaded before this script) gives gettext and interpolate; English without it.
  var _ = window.gettext || function (s) { return s; };
  function fmt(text, values) {
    return window.interpolate ? window.interpolate(text, values, true)
      : text.replace(/%\((\w+)\)s/g, function (m, k) { return values[k]; });
  }

  function ago(iso) {
    var s = (Date.now() - Date.parse(iso)) / 1000;
    var past = s >= 0;
    s = Math.abs(s);
    if (s < 90) return fmt(past ? _("%(n)s s ago") : _("%(n)s s from now"), { n: Math.floor(s) });
    if (s < 5400) return fmt(past ? _("%(n)s min ago") : _("%(n)s min from now"), { n: Math.floor(s / 60) });
    if (s < 172800) return fmt(past ? _("%(n)s h ago") : _("%(n)s h from now"), { n: Math.floor(s / 3600) });
    return fmt(past ? _("%(n)s d ago") : _("%(n)s d from now"), { n: Math.floor(s / 86400) });
  }

  function tickRelative(root) {
    (root || document).querySelectorAll("[data-since]").forEach(function (el) {
      el.textContent = ago(el.getAttribute("data-since"));
    });
    var stalest = 0;
    document.querySelectorAll("[data-updated]").forEach(function (el) {
      var age = (Date.now() - Number(el.getAttribute("data-loaded") || Date.now())) / 1000;
      if (el.hasAttribute("data-data-at")) {
        // the overview names the age of its data, not of the page (docs/operations.md)
        var at = el.getAttribute("data-data-at");
        if (at) el.textContent = fmt(_("data from %(ago)s (%(time)s)"), { ago: ago(at), time: el.getAttribute("data-data-time") });
      } else {
        el.textContent = fmt(_("updated %(n)s s ago"), { n: Math.floor(age) });
      }
      el.classList.toggle("stale", age > 120);
      stalest = Math.max(stalest, age);
    });
    staleBanner(stalest);
  }

  // The node grid is one tab stop (its first tile, or the last one focused); arrow keys move
  // between tiles by position, Home/End to the first and last (WCAG: a composite widget).
  function rovingTiles() {
    document.querySelectorAll(".grid").forEach(function (grid) {
      var tiles = grid.querySelectorAll("a.tile");
      var current = grid.querySelector("a.tile[tabindex='0']");
      tiles.forEach(function (t, i) { t.tabIndex = (current ? t === current : i === 0) ? 0 : -1; });
    });
  }

  function tileKeys(event) {
    var tile = event.target.closest && event.target.closest(".grid a.tile");
    if (!tile) return;
    var tiles = Array.prototype.slice.call(tile.closest(".grid").querySelectorAll("a.tile"));
    var here = tile.getBoundingClientRect(), next = null, key = event.key;
    if (key === "ArrowRight") next = tiles[tiles.indexOf(tile) + 1];
    else if (key === "ArrowLeft") next = tiles[tiles.indexOf(tile) - 1];
    else if (key === "Home") next = tiles[0];
    else if (key === "End") next = tiles[tiles.length - 1];
    else if (key === "ArrowDown" || key === "ArrowUp") {
      var down = key === "ArrowDown", best = Infinity;
      tiles.forEach(function (t) {
        var r = t.getBoundingClientRect();
        var dy = down ? r.top - here.top : here.top - r.top;
        if (dy < 2) return;  // same row, or the wrong way
        var score = dy * 1000 + Math.abs(r.left - here.left);
        if (score < best) { best = score; next = t; }
      });
    } else return;
    event.preventDefault();
    if (!next) return;
    tile.tabIndex = -1;
    next.tabIndex = 0;
    next.focus();
  }

  // The node grids' compact racks (docs/pages.md, Node grids; apps/common/node_grid.py):
  // a rack's names as a Slurm hostlist and a character a node — "." a healthy tile, "+" one
  // in a job, "!" the next tile the server sent as a link; "13." is thirteen "." — drawn
  // here as the links the server would have sent, in the rack's order, with the page's
  // words (its [data-tile-words]).
  function hostlistNames(list) {
    var names = [];
    (list.match(/[^,\[]*(\[[^\]]*\][^,\[]*)*/g) || []).forEach(function (part) {
      if (!part) return;
      var m = /^([^\[]*)\[([^\]]*)\](.*)$/.exec(part);
      if (!m) { names.push(part); return; }
      m[2].split(",").forEach(function (range) {
        var ends = range.split("-"), width = ends[0].length;
        var lo = Number(ends[0]), hi = Number(ends.length > 1 ? ends[1] : ends[0]);
        for (var n = lo; n <= hi; n++) {
          var digits = String(n);
          while (digits.length < width) digits = "0" + digits;
          names.push(m[1] + digits + m[3]);
        }
      });
    });
    return names;
  }

  function tileCodes(text) {
    return text.replace(/(\d+)(\D)/g, function (all, n, code) { return new Array(Number(n) + 1).join(code); });
  }

  function tileWords() {
    var el = document.querySelector("[data-tile-words]");
    try { return el ? JSON.parse(el.getAttribute("data-tile-words")) : null; } catch (e) { return null; }
  }

  function drawRack(rack, words) {
    var names = hostlistNames(rack.getAttribute("data-hosts"));
    var codes = tileCodes(rack.getAttribute("data-tiles"));
    var sent = Array.prototype.slice.call(rack.querySelectorAll("a.tile"));
    var drawn = document.createDocumentFragment();
    for (var i = 0; i < codes.length && i < names.length; i++) {
      var code = codes.charAt(i);
      if (code === "!") { if (sent.length) drawn.appendChild(sent.shift()); continue; }
      var a = document.createElement("a"), busy = code === "+";
      a.className = "tile state-healthy" + (busy ? " busy" : "") + (words.unverified ? " unverified" : "");
      a.href = words.prefix + encodeURIComponent(names[i]) + "/";
      a.title = names[i] + " · " + words.healthy + (busy ? words.in_job : "") +
        (words.unverified ? " · " + words.unverified : "");
      drawn.appendChild(a);
    }
    rack.appendChild(drawn);
    rack.removeAttribute("data-tiles");
  }

  function drawGrids(root) {
    var words = tileWords();
    if (!words) return;
    (root || document).querySelectorAll(".rack[data-tiles]").forEach(function (rack) { drawRack(rack, words); });
  }

  // The topology's components with nothing wrong are one closed line a kind; opening it
  // draws them from the page's data (docs/pages.md, Node grids).
  function quietRows(details) {
    if (details.getAttribute("data-drawn")) return;
    details.setAttribute("data-drawn", "1");
    var data = JSON.parse(document.getElementById(details.getAttribute("data-quiet")).textContent);
    var box = details.querySelector(".quiet-rows"), html = [];
    data.rows.forEach(function (row) {
      var head = data.heads[row[2]], key = data.kind + ":" + row[0];
      var div = document.createElement("div"), name = document.createElement("b");
      div.id = key;
      div.setAttribute("data-component", key);
      name.className = head[0];
      name.textContent = row[0];
      div.appendChild(name);
      div.insertAdjacentHTML("beforeend", " " + head[1]);
      var grid = document.createElement("div"), rack = document.createElement("div");
      grid.className = "grid";
      rack.className = "rack";
      rack.setAttribute("data-hosts", row[1]);
      rack.setAttribute("data-tiles", hostlistNames(row[1]).length + ".");  // every tile plain
      grid.appendChild(rack);
      div.appendChild(grid);
      html.push(div);
    });
    html.forEach(function (div) { box.appendChild(div); });
    drawGrids(box);
    rovingTiles();
  }

  function quietComponents() {
    document.querySelectorAll("details[data-quiet]").forEach(function (details) {
      details.addEventListener("toggle", function () { if (details.open) quietRows(details); });
      if (details.open) quietRows(details);
    });
    quietTarget();
    window.addEventListener("hashchange", quietTarget);
  }

  // An address naming a quiet component (#switch:leaf-07) opens its kind's line.
  function quietTarget() {
    var key = decodeURIComponent(window.location.hash.slice(1));
    if (!key || document.getElementById(key)) return;
    document.querySelectorAll("details[data-quiet]").forEach(function (details) {
      if (key.indexOf(details.getAttribute("data-kind") + ":") !== 0) return;
      details.open = true;
      quietRows(details);
      var target = document.getElementById(key);
      if (target) target.scrollIntoView();
    });
  }

  // On a page that refreshes itself, data older than two refresh periods is said in a
  // full-width banner (a wall screen whose network went away must not look current).
  function staleBanner(age) {
    var banner = document.querySelector(".stale-note");
    var periods = Array.prototype.map.call(
      document.querySelectorAll("[data-refresh],[data-live],[data-figure]"),
      function (el) { return Number(el.getAttribute("data-interval") || el.getAttribute("data-live") || 30); }
    );
    if (!banner || !periods.length || document.hidden) return;
    var stale = age > 2 * Math.min.apply(null, periods) + 5;
    banner.hidden = !stale;
    if (stale) banner.querySelector(".stale-age").textContent = fmt(_("%(n)s s"), { n: Math.floor(age) });
  }

  // Poll on an interval, never overlapping requests; paused while the tab is hidden, and
  // run at once when it is shown again.
  function poll(fn, seconds) {
    var busy = false;
    function tick() {
      if (busy || document.hidden) return;
      busy = true;
      Promise.resolve(fn()).catch(function () {}).then(function () { busy = false; });
    }
    setInterval(tick, seconds * 1000);
    document.addEventListener("visibilitychange", function () { if (!document.hidden) tick(); });
  }

  function markLoaded() {
    document.querySelectorAll("[data-updated]").forEach(function (el) {
      el.setAttribute("data-loaded", String(Date.now()));
    });
    scrollStops();
  }

  // A region that scrolls (a wide table inside its card on a phone) must be reachable from
  // the keyboard: it is a tab stop while it scrolls and nothing in it takes focus, and
  // stops being one when a wider window lets it fit.
  function scrollStops() {
    document.querySelectorAll(".table-wrap, .card, [data-live]").forEach(function (el) {
      var style = getComputedStyle(el);
      var scrolls = /(auto|scroll)/.test(style.overflowX + " " + style.overflowY) &&
        (el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1);
      var focusable = el.querySelector("a[href], button, input, select, textarea, [tabindex]");
      if (scrolls && !focusable && !el.hasAttribute("tabindex")) {
        el.tabIndex = 0;
        el.setAttribute("data-scroll-stop", "");
      } else if (!scrolls && el.hasAttribute("data-scroll-stop")) {
        el.removeAttribute("tabindex");
        el.removeAttribute("data-scroll-stop");
      }
    });
  }

  function refreshPanel(el) {
    return fetch(el.getAttribute("data-refresh"), { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
      .then(function (html) { el.innerHTML = html; drawGrids(el); dataLine(el); markLoaded(); tickRelative(el); rovingTiles(); });
  }

  // The overview's "data from" line sits in the page's head, outside the polled panels; each
  // panel brings the newest evidence's time with it, so the line refreshes with the panels
  // (docs/operations.md, Watching the watcher).
  function dataLine(root) {
    var src = root.querySelector("[data-data-source]");
    var line = document.querySelector("[data-updated][data-data-at]");
    if (!src || !line) return;
    var at = src.getAttribute("data-data-at"), ok = src.getAttribute("data-data-ok") === "1";
    line.setAttribute("data-data-at", at);
    line.setAttribute("data-data-time", src.getAttribute("data-data-time"));
    line.classList.toggle("data-stale", !ok);
    line.title = ok ? _("the newest completed health check run")
      : _("the newest completed health check run; KUAE's pipeline is not working");
    if (!at) line.textContent = src.getAttribute("data-data-words");
  }

  // The pipeline's red banner (KUAE's own worker, beat or checks stale) shows on a page left
  // open, and goes, without a reload: it is polled with the page's own refresh period (its
  // shortest; 20 s on a page that refreshes nothing), and swapped only when its words
  // change (docs/operations.md, Watching the watcher).
  function pipelineBanner() {
    var box = document.querySelector("[data-pipeline-banner]");
    if (!box) return;
    var periods = Array.prototype.map.call(
      document.querySelectorAll("[data-refresh],[data-live],[data-figure]"),
      function (el) { return Number(el.getAttribute("data-interval") || el.getAttribute("data-live") || 30); }
    );
    var seconds = periods.length ? Math.min(20, Math.min.apply(null, periods)) : 20;
    poll(function () {
      return fetch(box.getAttribute("data-pipeline-banner"), { credentials: "same-origin" })
        .then(function (r) { if (!r.ok || r.redirected) throw new Error(r.status); return r.text(); })
        .then(function (html) {
          var fresh = new DOMParser().parseFromString(html, "text/html").body;
          if (fresh.textContent.trim() !== box.textContent.trim()) box.innerHTML = fresh.innerHTML;
        });
    }, seconds);
  }

  // One Plotly template for light and dark, from the page's own CSS palette (--fg, --muted,
  // --line, --card), so a chart follows the colour scheme like the rest of the page.
  function palette() {
    var css = getComputedStyle(document.documentElement);
    function v(name) { return css.getPropertyValue(name).trim(); }
    return { fg: v("--fg"), muted: v("--muted"), line: v("--line"), card: v("--card"), bg: v("--bg") };
  }

  // Plotly's own words — its toolbar's tips, the month and weekday names on a time axis — in
  // the page's language (docs/pages.md, Language): a Chinese page registers a zh-CN locale
  // once and draws every chart with it.
  var ZH_CN = {
    moduleType: "locale",
    name: "zh-CN",
    dictionary: {
      "Autoscale": "自动缩放", "Box Select": "矩形框选", "Lasso Select": "套索选择",
      "Compare data on hover": "悬停时比较数据", "Show closest data on hover": "悬停时显示最近的数据",
      "Toggle Spike Lines": "切换数据点辅助线", "Toggle show closest data on hover": "切换悬停显示最近的数据",
      "Double-click on legend to isolate one trace": "双击图例只显示这条曲线",
      "Double-click to zoom back out": "双击恢复缩放",
      "Download plot as a png": "下载图表为 PNG", "Download plot as a PNG": "下载图表为 PNG",
      "Download plot as JSON": "下载图表为 JSON", "Download plot": "下载图表",
      "Share": "分享", "Share chart": "分享图表", "Share chart...": "分享图表…",
      "Pan": "平移", "Zoom": "缩放", "Zoom in": "放大", "Zoom out": "缩小",
      "Reset": "重置", "Reset axes": "重置坐标轴", "Reset view": "重置视图", "Reset views": "重置视图",
      "Orbital rotation": "轨道旋转", "Turntable rotation": "转台旋转",
      "Draw line": "画线", "Erase active shape": "删除选中形状",
      "Produced with Plotly.js": "由 Plotly.js 生成",
      "Taking snapshot - this may take a few seconds": "正在生成快照，可能需要几秒钟",
      "Snapshot succeeded": "快照已生成",
      "Sorry, there was a problem downloading your snapshot!": "抱歉，下载快照时出错！",
      "trace": "曲线", "min:": "最小值：", "max:": "最大值：", "mean:": "均值：",
      "median:": "中位数：", "q1:": "下四分位：", "q3:": "上四分位："
    },
    format: {
      days: ["星期日", "星期一", "星期二", "星期三", "星期四", "星期五", "星期六"],
      shortDays: ["周日", "周一", "周二", "周三", "周四", "周五", "周六"],
      months: ["一月", "二月", "三月", "四月", "五月", "六月", "七月", "八月", "九月", "十月",
               "十一月", "十二月"],
      shortMonths: ["1月", "2月", "3月", "4月", "5月", "6月", "7月", "8月", "9月", "10月", "11月",
                    "12月"],
      date: "%Y-%m-%d",
      decimal: ".",
      thousands: ","
    }
  };
  function plotConfig(config) {
    var lang = (document.documentElement.lang || "").toLowerCase();
    if (lang.indexOf("zh") !== 0 || !window.Plotly) return config;
    if (!plotConfig.registered) {
      window.Plotly.register(ZH_CN);
      plotConfig.registered = true;
    }
    return Object.assign({}, config || {}, { locale: "zh-CN" });
  }

  function themed(layout) {
    var c = palette();
    var axis = { gridcolor: c.line, linecolor: c.line, zerolinecolor: c.line, tickcolor: c.line,
                 tickfont: { color: c.muted }, title: { font: { color: c.fg } },
                 rangeselector: { bgcolor: c.card, activecolor: c.line, bordercolor: c.line,
                                  font: { color: c.fg } } };
    var out = Object.assign({}, layout);
    out.font = Object.assign({ color: c.fg }, layout.font || {});
    out.template = { layout: {
      xaxis: axis, yaxis: axis, legend: { font: { color: c.fg } },
      hoverlabel: { bgcolor: c.card, bordercolor: c.line, font: { color: c.fg } },
    } };
    return out;
  }

  // A phone's chart (narrower than 520 px): a waterfall turns on its side, its steps down
  // the left where their names have room (upright, six names share 50 px each and run
  // into one another); a chart with a legend puts it under the plot, clear of the toolbar,
  // which shows only while a finger or pointer is on the chart (docs/pages.md, Every
  // screen size).
  function fitted(el, fig) {
    if (document.body.classList.contains("kiosk") && window.innerWidth > 1920) {
      // a wall screen: the chart's type and height grow with the screen, as the page's do
      var grow = window.innerWidth / 1920;
      var big = Object.assign({}, fig.layout);
      big.font = Object.assign({}, big.font || {}, { size: Math.round(12 * grow) });
      if (big.height) big.height = Math.round(big.height * grow);
      // the band over the plot (the toolbar's, the range buttons' row) grows with the type
      if (big.margin && big.margin.t) big.margin = Object.assign({}, big.margin, { t: Math.round(big.margin.t * grow) });
      return { data: fig.data, layout: big, config: fig.config };
    }
    if (el.clientWidth >= 520) return fig;
    var layout = Object.assign({}, fig.layout);
    var data = fig.data;
    var config = Object.assign({}, fig.config || {}, { displayModeBar: "hover" });
    if (data.length === 1 && data[0].type === "waterfall" && data[0].orientation !== "h") {
      var t = data[0];
      var names = (layout.xaxis && layout.xaxis.ticktext || t.x).map(function (n) {
        return String(n).replace(/<br>/g, " ");
      });
      data = [Object.assign({}, t, {
        orientation: "h", x: t.y, y: t.x, textposition: "auto", cliponaxis: false,
        hovertemplate: "%{y}: %{x:,.1f} GPU·h<extra></extra>",
      })];
      layout.xaxis = Object.assign({}, layout.yaxis || {}, { automargin: true });
      layout.yaxis = { tickmode: "array", tickvals: t.x, ticktext: names, autorange: "reversed",
                       automargin: true };
      layout.margin = Object.assign({}, layout.margin || {}, { l: 8, r: 12 });
    }
    var plot = stacked(layout);
    if (layout.showlegend !== false) {
      var margin = Object.assign({ t: 36, b: 40 }, layout.margin || {});
      var y = -50 / plot;  // 50 px under a stack of charts (stacked() made room for it)
      if (!plot) {
        // under one chart: below its x axis's labels (the bottom margin it had: slanted names
        // take 120 px), the chart taller by the legend's rows, one name a row on a phone
        var below = margin.b, rows = data.filter(function (t) {
          return t.showlegend !== false && t.name;
        }).length;
        var legendPx = 20 * rows + 12, height = layout.height || 320;
        y = -below / (height - margin.t - below);
        margin.b = below + legendPx;
        layout.height = height + legendPx;
      } else {
        margin.b = 90;
      }
      layout.legend = Object.assign({}, layout.legend || {}, {
        orientation: "h", x: 0, xanchor: "left", y: y, yanchor: "top",
      });
      layout.margin = margin;
    }
    return { data: data, layout: layout, config: config };
  }

  // A grid of small charts (the node page's GPU and port charts: yaxis, yaxis2 … each with
  // its title as an annotation) goes into one column on a phone: two columns of 170 px ran
  // their titles into one another.
  function stacked(layout) {
    var ys = Object.keys(layout).filter(function (k) { return /^yaxis\d*$/.test(k); });
    var notes = layout.annotations || [];
    if (ys.length < 2 || notes.length !== ys.length || !(layout.xaxis && layout.xaxis.domain)) return 0;
    var n = ys.length, cell = 170, gap = 44, plot = n * cell + (n - 1) * gap;
    for (var i = 0; i < n; i++) {
      var s = i === 0 ? "" : String(i + 1);
      var top = 1 - i * (cell + gap) / plot;
      layout["xaxis" + s] = Object.assign({}, layout["xaxis" + s], {
        domain: [0, 1], showticklabels: i === n - 1 });
      layout["yaxis" + s] = Object.assign({}, layout["yaxis" + s], {
        domain: [top - cell / plot, top] });
      notes[i] = Object.assign({}, notes[i], { x: 0, y: top });
    }
    layout.annotations = notes;
    var margin = layout.margin || { t: 30, b: 40 };
    layout.height = plot + (margin.t || 30) + (margin.b || 40);
    if (layout.showlegend !== false) layout.height += 80;  // the legend, under the plot
    return plot;
  }

  function drawChart(el) {
    return fetch(el.getAttribute("data-figure"), { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
      .then(function (fig) {
        if (!window.Plotly) throw new Error("plotly not loaded");
        if (!el.dataset.drawn) el.innerHTML = "";
        el.dataset.drawn = "1";
        el._kuaeFigure = fig;
        fig = fitted(el, fig);
        return window.Plotly.react(el, fig.data, themed(fig.layout), plotConfig(fig.config));
      })
      .then(function () { markLoaded(); rangeFromUrl(el); })
      .catch(function (err) {
        if (el.dataset.drawn) return;
        var p = document.createElement("p");
        p.className = "error";
        p.textContent = fmt(_("Chart failed to load (%(error)s)."), { error: err.message });
        el.replaceChildren(p);
      });
  }

  // The charts' range buttons (1 h, 6 h, 24 h, 7 d, 30 d, all) put the range in the address
  // (?range=7d, with history.replaceState), the key the node page's range links use, so a
  // view can be shared and a reload keeps it (docs/pages.md, Charts). A page opened with
  // ?range= presses that button on each chart that has it; pressing one presses it on the
  // page's other charts too, so what is shown is what a reload shows.
  var RANGE_LABEL = /^(\d+ ?[hd]|all)$/;
  var rangeSyncing = false;
  function rangeKey(label) {
    label = (label || "").trim();
    return RANGE_LABEL.test(label) ? label.replace(" ", "") : null;
  }
  function pressRange(el, key) {
    Array.prototype.forEach.call(el.querySelectorAll(".rangeselector .button"), function (b) {
      if (rangeKey(b.textContent) === key) b.dispatchEvent(new MouseEvent("click", { bubbles: true }));
    });
  }
  function rangeClick(event) {
    var button = event.target && event.target.closest && event.target.closest(".rangeselector .button");
    var key = button && rangeKey(button.textContent);
    if (!key || rangeSyncing) return;
    var url = new URL(window.location.href);
    if (key === "all") url.searchParams.delete("range"); else url.searchParams.set("range", key);
    if (window.history.replaceState) window.history.replaceState(window.history.state, "", url.toString());
    var chart = button.closest(".js-plotly-plot");
    rangeSyncing = true;
    try {
      document.querySelectorAll(".js-plotly-plot").forEach(function (el) { if (el !== chart) pressRange(el, key); });
    } finally { rangeSyncing = false; }
  }
  function rangeFromUrl(el) {
    if (el.dataset.rangeApplied) return;
    el.dataset.rangeApplied = "1";
    var key = new URL(window.location.href).searchParams.get("range");
    if (!key || key === "all") return;
    rangeSyncing = true;
    try { pressRange(el, key); } finally { rangeSyncing = false; }
  }

  function redrawAll() {
    document.querySelectorAll(".js-plotly-plot").forEach(function (el) {
      var fig = el._kuaeFigure;
      if (fig && window.Plotly) {
        fig = fitted(el, fig);
        window.Plotly.react(el, fig.data, themed(fig.layout), plotConfig(fig.config));
      }
    });
  }

  // Lists and tables marked `data-live` (with an id) refresh in place from the page's own
  // address, like the overview's panels: one request for all of them, paused when hidden.
  function refreshLive(els) {
    return fetch(window.location.href, { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        els.forEach(function (el) {
          var fresh = doc.getElementById(el.id);
          // compared with what the server sent last, not with the tiles drawn from it
          var sent = el._kuaeSent === undefined ? el.innerHTML : el._kuaeSent;
          if (fresh && fresh.innerHTML !== sent) {
            el.innerHTML = el._kuaeSent = fresh.innerHTML;
            drawGrids(el);
            tickRelative(el);
          }
        });
        rovingTiles();
        markLoaded();
      });
  }

  // "/" anywhere but in a field focuses the header's search box (as on GitHub or Grafana).
  function searchKey(event) {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
    var t = event.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    var box = document.getElementById("site-search");
    if (!box || !box.offsetParent) return;
    event.preventDefault();
    box.focus();
    box.select();
  }

  // Times are written in UTC (<time datetime>); the header's toggle shows them in this
  // browser's time zone instead and back, remembered per browser (localStorage).
  var TZ_KEY = "kuae.times";
  var UTC_TEXT = /^(\d{4}-)?\d\d-\d\d \d\d:\d\d(:\d\d)?( UTC)?$/;
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function localText(date, original) {
    var text = pad(date.getMonth() + 1) + "-" + pad(date.getDate()) + " " +
      pad(date.getHours()) + ":" + pad(date.getMinutes());
    if (/^\d{4}-/.test(original)) text = date.getFullYear() + "-" + text;
    if (/:\d\d:\d\d/.test(original)) text += ":" + pad(date.getSeconds());
    return text;
  }
  function zoneName() {
    var minutes = -new Date().getTimezoneOffset();
    var sign = minutes >= 0 ? "+" : "-";
    minutes = Math.abs(minutes);
    return "UTC" + sign + pad(Math.floor(minutes / 60)) + (minutes % 60 ? ":" + pad(minutes % 60) : "");
  }
  function showTimes(local, root) {
    (root || document).querySelectorAll("time[datetime]").forEach(function (el) {
      if (local && !el.hasAttribute("data-utc")) {
        var original = el.textContent.trim();
        var date = new Date(el.getAttribute("datetime"));
        if (!UTC_TEXT.test(original) || isNaN(date.getTime())) return;
        el.setAttribute("data-utc", original);
        el.textContent = localText(date, original);
      } else if (!local && el.hasAttribute("data-utc")) {
        el.textContent = el.getAttribute("data-utc");
        el.removeAttribute("data-utc");
      }
    });
  }
  // The header's "More" menu (below 1600 px): opens on its button, closes on Escape, on a
  // click elsewhere, or when focus leaves it.
  function navMore() {
    var more = document.querySelector(".nav-more");
    if (!more) return;
    var button = more.querySelector(".nav-more-toggle");
    function set(open) {
      more.classList.toggle("open", open);
      button.setAttribute("aria-expanded", open ? "true" : "false");
    }
    button.addEventListener("click", function () { set(!more.classList.contains("open")); });
    document.addEventListener("click", function (e) { if (!more.contains(e.target)) set(false); });
    more.addEventListener("focusout", function (e) {
      if (e.relatedTarget && !more.contains(e.relatedTarget)) set(false);
    });
    more.addEventListener("keydown", function (e) {
      if (e.key === "Escape" && more.classList.contains("open")) { set(false); button.focus(); }
    });
  }

  function timeZoneToggle() {
    var button = document.querySelector(".tz-toggle");
    var local = false;
    try { local = window.localStorage.getItem(TZ_KEY) === "local"; } catch (e) { /* private mode */ }
    function apply() {
      showTimes(local);
      document.documentElement.classList.toggle("local-times", local);
      if (button) {
        button.setAttribute("aria-pressed", local ? "true" : "false");
        // "Times:" and "(local)" are dropped from sight below 1440 px (the header fits at
        // 1280 px); the label keeps every word.
        var label = local ? fmt(_("Times: %(zone)s (local)"), { zone: zoneName() }) : _("Times: UTC");
        button.setAttribute("aria-label", label);
        var word = document.createElement("span"), tail = document.createElement("span");
        word.className = tail.className = "tz-word";
        word.textContent = _("Times:") + " ";
        tail.textContent = " " + _("(local)");
        button.textContent = "";
        button.appendChild(word);
        button.appendChild(document.createTextNode(local ? zoneName() : "UTC"));
        if (local) button.appendChild(tail);
        button.title = local ? _("Times are shown in this browser's time zone; press for UTC")
          : _("Times are shown in UTC; press to show them in this browser's time zone");
      }
    }
    if (button) {
      button.addEventListener("click", function () {
        local = !local;
        try { window.localStorage.setItem(TZ_KEY, local ? "local" : "utc"); } catch (e) { /* ignore */ }
        apply();
      });
    }
    apply();
    // Parts swapped in by live refreshes arrive in UTC: convert them as they come.
    if (window.MutationObserver) {
      new MutationObserver(function () { if (local) showTimes(true); })
        .observe(document.body, { childList: true, subtree: true });
    }
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
      el._kuaeFigure = fig;
      fig = fitted(el, fig);
      if (window.Plotly) {
        el.innerHTML = "";
        window.Plotly.newPlot(el, fig.data, themed(fig.layout), plotConfig(fig.config)).then(function () { rangeFromUrl(el); });
      }
    });
    pipelineBanner();
    var live = Array.prototype.slice.call(document.querySelectorAll("[data-live][id]"));
    live.forEach(function (el) { el._kuaeSent = el.innerHTML; });
    drawGrids();
    quietComponents();
    if (live.length) {
      poll(function () { return refreshLive(live); }, Number(live[0].getAttribute("data-live") || 20));
    }
    if (window.matchMedia) {
      var scheme = window.matchMedia("(prefers-color-scheme: dark)");
      if (scheme.addEventListener) scheme.addEventListener("change", redrawAll);
    }
    rovingTiles();
    window.addEventListener("resize", scrollStops);
    document.addEventListener("keydown", tileKeys);
    var toggle = document.querySelector(".menu-toggle");
    if (toggle) {
      toggle.addEventListener("click", function () {
        var open = toggle.closest("header").classList.toggle("open");
        toggle.setAttribute("aria-expanded", open ? "true" : "false");
      });
    }
    navMore();
    document.querySelectorAll("[data-autosubmit]").forEach(function (el) {
      el.addEventListener("change", function () { el.form.submit(); });
    });
    document.addEventListener("keydown", searchKey);
    document.addEventListener("click", rangeClick);
    timeZoneToggle();
  });
})();
