// The dashboard page's script (served as ?asset=page.js: the CSP allows no inline script).
"use strict";
(function () {
  const base = location.pathname.endsWith("/") ? location.pathname : location.pathname + "/";
  const SVG = "http://www.w3.org/2000/svg";
  const STATE_COLOR = { closed: "#2e7d32", open: "#c62828", half_open: "#ef6c00", forced_open: "#6a1b9a", disabled: "#616161" };
  let states = ["closed", "open", "half_open", "forced_open", "disabled"];
  let controls = false;
  let intervalMs = 500;
  let historyLen = 360;
  const history = new Map();   // name -> [[t_ms, state, calls/s, failure rate, rejected/s], ...]
  const tiles = new Map();     // name -> {root, parts}
  const bulkTiles = new Map();
  const policyTiles = new Map(); // kind + "\u0000" + name -> {root, p}
  const policyHistory = new Map(); // same key -> [[t_ms, every figure's value], ...], since the page opened
  // Kinds drawn in a section of their own above; every other policy gets a
  // generic tile from what it reports (kind, mode, figures).
  const OWN_VIEW = new Set(["bulkhead"]);

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function rate(v) { return v === null || v === undefined ? "\u2013" : v < 10 ? v.toFixed(1) : String(Math.round(v)); }
  function pct(v) { return v === null || v === undefined ? "\u2013" : (v * 100).toFixed(0) + "%"; }
  function dur(ms) {
    const s = Math.floor(ms / 1000);
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m" + String(s % 60).padStart(2, "0") + "s";
    return Math.floor(s / 3600) + "h" + String(Math.floor(s / 60) % 60).padStart(2, "0") + "m";
  }
  function stat(box, label) {
    const d = el("div"); const b = el("b", "", "\u2013"); d.append(b, el("span", "", label)); box.append(d); return b;
  }
  function bar(label) {
    const root = el("div", "bar"); const top = el("div", "label"); const name = el("span", "", label); const val = el("span", "", "\u2013");
    top.append(name, val);
    const track = el("div", "track"); const fill = el("div", "fill"); const mark = el("div", "mark"); mark.hidden = true;
    track.append(fill, mark); root.append(top, track);
    return { root, val, fill, mark };
  }
  function setBar(b, value, threshold) {
    const v = Math.max(0, Math.min(1, value || 0));
    b.fill.style.width = (v * 100).toFixed(1) + "%";
    b.fill.classList.toggle("over", threshold !== null && threshold !== undefined && value >= threshold);
    if (threshold === null || threshold === undefined) {
      b.mark.hidden = true; b.val.textContent = pct(value);
    } else {
      b.mark.hidden = false; b.mark.style.left = "calc(" + (threshold * 100).toFixed(1) + "% - 1px)";
      b.val.textContent = pct(value) + " / trips at " + pct(threshold);
    }
  }

  async function control(name, action, msg) {
    const token = document.getElementById("token").value;
    sessionStorage.setItem("fusebox-token", token);
    msg.textContent = action + "\u2026";
    try {
      const r = await fetch(base + "api/breakers/" + encodeURIComponent(name) + "/" + action, {
        method: "POST", headers: { "Authorization": "Bearer " + token }, credentials: "same-origin",
      });
      const body = await r.json();
      msg.textContent = r.ok ? action + ": now " + body.state : action + " refused: " + body.error;
    } catch (e) {
      msg.textContent = action + " failed: " + e.message;
    }
  }

  function breakerTile(b) {
    const root = el("div", "tile"); root.dataset.name = b.name;
    const head = el("div", "head"); const name = el("span", "name", b.name); const state = el("span", "state", b.state);
    head.append(name, state);
    const tags = el("div", "tags");
    const stats = el("div", "stats");
    const fleet = el("div", "fleet-state"); fleet.hidden = true;
    const p = {
      state, tags, fleet,
      calls: stat(stats, "calls/s"), failures: stat(stats, "failures/s"),
      rejected: stat(stats, "rejected/s"), since: stat(stats, "in state"),
      failure: bar("failure rate"), slow: bar("slow-call rate"),
      trend: trendBox(), msg: el("div", "msg"),
    };
    root.append(head, fleet, tags, stats, p.failure.root, p.slow.root, p.trend.root);
    if (controls) {
      const actions = el("div", "actions");
      for (const [action, label] of [["force_open", "Force open"], ["disable", "Disable"], ["reset", "Reset"]]) {
        const button = el("button", "", label); button.type = "button"; button.dataset.action = action;
        button.addEventListener("click", () => control(b.name, action, p.msg));
        actions.append(button);
      }
      root.append(actions, p.msg);
    }
    return { root, p, tagKey: null };
  }

  // The trend of a breaker: two charts on one time axis, each with one unit
  // (calls/s above, rates in % below), values on hover, thresholds labelled.
  const SERIES = {
    calls: { color: "#1570ef", label: "calls/s" },
    rejected: { color: "#6a1b9a", label: "rejected/s", dash: "2 2" },
    failure: { color: "#c62828", label: "failure rate" },
    slow: { color: "#ef6c00", label: "slow-call rate", dash: "6 3" },
  };
  function svgEl(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    return e;
  }
  function chart(cls, keys) {
    const root = el("div", "chart " + cls);
    const axis = el("div", "axis-y"); const top = el("span", "", "\u2013"); const bottom = el("span", "", "0");
    axis.append(top, bottom);
    const plot = el("div", "plot");
    const svg = svgEl("svg", { viewBox: "0 0 300 60", preserveAspectRatio: "none" });
    const marks = el("div", "marks"); // threshold labels, positioned over the plot
    plot.append(svg, marks);
    const legend = el("div", "legend");
    const keyEls = {};
    for (const k of keys) {
      const item = el("span", "", SERIES[k].label); const swatch = el("i");
      swatch.style.borderTopColor = SERIES[k].color; if (SERIES[k].dash) swatch.classList.add("dashed");
      item.prepend(swatch); legend.append(item); keyEls[k] = item;
    }
    root.append(axis, plot, legend);
    return { root, svg, top, bottom, marks, keyEls };
  }
  // A policy's gauges over time: one chart per unit (a name ending in _us,
  // _ms or _permille says its unit; the others are counts), a line per gauge.
  const GAUGE_COLORS = ["#1570ef", "#c62828", "#2e7d32", "#ef6c00"];
  const UNITS = { us: "\u00b5s", ms: "ms", permille: "\u2030" };
  function gaugeCharts(figures) {
    const groups = [];
    figures.forEach((f, i) => {
      if (f.kind !== "gauge") return;
      const m = f.name.match(/_(us|ms|permille)$/);
      const unit = m ? m[1] : "";
      let g = groups.find((x) => x.unit === unit);
      if (!g) {
        const root = el("div", "chart gauges"); root.dataset.unit = unit || "count";
        const axis = el("div", "axis-y"); const top = el("span", "", "\u2013"); axis.append(top, el("span", "", "0"));
        const plot = el("div", "plot"); const svg = svgEl("svg", { viewBox: "0 0 300 60", preserveAspectRatio: "none" });
        plot.append(svg);
        const legend = el("div", "legend");
        root.append(axis, plot, legend);
        g = { unit, idx: [], root, svg, top, legend };
        groups.push(g);
      }
      const label = (m ? f.name.slice(0, -m[0].length) : f.name).replace(/_/g, " ");
      const item = el("span", "", label); const swatch = el("i");
      swatch.style.borderTopColor = GAUGE_COLORS[g.idx.length % GAUGE_COLORS.length];
      item.prepend(swatch); g.legend.append(item);
      g.idx.push({ i, label });
    });
    return groups;
  }
  function drawGauges(groups, points) {
    const W = 300, H = 60;
    for (const g of groups) {
      while (g.svg.firstChild) g.svg.removeChild(g.svg.firstChild);
      if (points.length === 0) continue;
      const tEnd = points[points.length - 1][0];
      const tStart = Math.min(Math.max(tEnd - historyLen * intervalMs, points[0][0]), tEnd - 10 * intervalMs);
      const x = (tm) => ((tm - tStart) / (tEnd - tStart || 1)) * W;
      const max = Math.max(1, ...points.flatMap((p) => g.idx.map(({ i }) => p[1 + i])));
      g.top.textContent = (max < 10 ? max.toFixed(1).replace(/\.0$/, "") : String(Math.round(max))) + (UNITS[g.unit] ? " " + UNITS[g.unit] : "");
      g.idx.forEach(({ i, label }, k) => {
        const pts = points.map((p) => x(p[0]).toFixed(1) + "," + (H - 2 - (p[1 + i] / max) * (H - 4)).toFixed(1));
        if (pts.length < 2) return;
        g.svg.append(svgEl("polyline", { points: pts.join(" "), fill: "none", stroke: GAUGE_COLORS[k % GAUGE_COLORS.length], "stroke-width": 1.6, "vector-effect": "non-scaling-stroke", "data-series": label }));
      });
    }
  }
  function trendBox() {
    const root = el("div", "trend");
    const load = chart("load", ["calls", "rejected"]);
    const rates = chart("rates", ["failure", "slow"]);
    rates.top.textContent = "100%"; rates.bottom.textContent = "0%";
    const xaxis = el("div", "axis-x"); const from = el("span", "", ""); xaxis.append(from, el("span", "", "now"));
    const readout = el("div", "readout", "hover the chart for values");
    root.append(load.root, rates.root, xaxis, readout);
    const t = { root, load, rates, from, readout, points: [], x: null };
    for (const c of [load, rates]) {
      c.svg.addEventListener("mousemove", (e) => hover(t, e, c.svg));
      c.svg.addEventListener("mouseleave", () => hover(t, null, c.svg));
    }
    return t;
  }
  function hover(t, e, svg) {
    for (const c of [t.load, t.rates]) { const old = c.svg.querySelector(".cursor"); if (old) old.remove(); }
    t.hovered = e ? { clientX: e.clientX, svg } : null;
    if (!e || t.points.length === 0) { t.readout.textContent = "hover the chart for values"; return; }
    const box = svg.getBoundingClientRect();
    const tx = t.tStart + ((e.clientX - box.left) / (box.width || 1)) * (t.tEnd - t.tStart);
    let best = t.points[0];
    for (const p of t.points) if (Math.abs(p[0] - tx) < Math.abs(best[0] - tx)) best = p;
    for (const c of [t.load, t.rates]) {
      const x = t.x(best[0]).toFixed(1);
      c.svg.append(svgEl("line", { class: "cursor", x1: x, x2: x, y1: 0, y2: 60, stroke: "#1d2330", "stroke-width": 1, "vector-effect": "non-scaling-stroke" }));
    }
    const ago = dur(Math.max(0, t.tEnd - best[0]));
    const parts = [ago === "0s" ? "now" : ago + " ago", states[best[1]].replace("_", " "),
      rate(best[2]) + " calls/s", rate(best[4]) + " rejected/s", "failure " + pct(best[3])];
    if (t.slow) parts.push("slow " + pct(best[5]));
    t.readout.textContent = parts.join(" \u00b7 ");
  }
  function drawTrend(t, points, thresholds, slow) {
    t.points = points; t.slow = slow;
    t.rates.keyEls.slow.hidden = !slow;
    for (const c of [t.load, t.rates]) { while (c.svg.firstChild) c.svg.removeChild(c.svg.firstChild); c.marks.replaceChildren(); }
    if (points.length === 0) return;
    const W = 300, H = 60;
    // The ring's span once full; until then the points there are, stretched
    // (at least ten intervals wide).
    const tEnd = points[points.length - 1][0];
    const tStart = Math.min(Math.max(tEnd - historyLen * intervalMs, points[0][0]), tEnd - 10 * intervalMs);
    const x = (tm) => ((tm - tStart) / (tEnd - tStart || 1)) * W;
    Object.assign(t, { tStart, tEnd, x });
    t.from.textContent = "\u2212" + dur(tEnd - tStart);
    const y = (v, max) => H - 2 - (v / max) * (H - 4);
    // State bands on both charts: one rectangle per run of a state other than closed.
    let runStart = 0;
    for (let i = 1; i <= points.length; i++) {
      if (i === points.length || points[i][1] !== points[runStart][1]) {
        const s = states[points[runStart][1]] || "closed";
        if (s !== "closed") {
          const x0 = x(points[runStart][0]); const x1 = i < points.length ? x(points[i][0]) : W;
          for (const c of [t.load, t.rates]) {
            c.svg.append(svgEl("rect", { x: x0.toFixed(1), y: 0, width: Math.max(1, x1 - x0).toFixed(1), height: H, fill: STATE_COLOR[s], opacity: 0.15 }));
          }
        }
        runStart = i;
      }
    }
    const line = (svg, index, max, series) => {
      const pts = [];
      for (const pt of points) { const v = pt[index]; if (v !== null && v !== undefined) pts.push(x(pt[0]).toFixed(1) + "," + y(v, max).toFixed(1)); }
      if (pts.length < 2) return;
      const attrs = { points: pts.join(" "), fill: "none", stroke: series.color, "stroke-width": 1.6, "vector-effect": "non-scaling-stroke", "data-series": series.label };
      if (series.dash) attrs["stroke-dasharray"] = series.dash;
      svg.append(svgEl("polyline", attrs));
    };
    // Calls/s and rejected/s share one scale: the larger of the two.
    const most = Math.max(1, ...points.flatMap((p) => [p[2], p[4]]).filter((v) => v !== null && v !== undefined));
    t.load.top.textContent = rate(most) + "/s";
    line(t.load.svg, 2, most, SERIES.calls);
    line(t.load.svg, 4, most, SERIES.rejected);
    line(t.rates.svg, 3, 1, SERIES.failure);
    if (slow) line(t.rates.svg, 5, 1, SERIES.slow);
    // Each threshold: a dashed line and its label ("trips 50%").
    const seen = new Set();
    thresholds.forEach((threshold, i) => {
      if (threshold === null || threshold === undefined) return;
      const yy = y(threshold, 1);
      t.rates.svg.append(svgEl("line", { x1: 0, x2: W, y1: yy.toFixed(1), y2: yy.toFixed(1), stroke: "#667085", "stroke-dasharray": "4 3", "vector-effect": "non-scaling-stroke" }));
      const label = el("span", "mark-label", (i === 0 ? "failure" : "slow") + " trips " + pct(threshold));
      label.style.top = ((yy / H) * 100).toFixed(1) + "%";
      if (seen.has(threshold)) label.classList.add("second");
      seen.add(threshold);
      t.rates.marks.append(label);
    });
    // Redrawn under the pointer: the cursor and the values follow the new frame.
    if (t.hovered) hover(t, t.hovered, t.hovered.svg);
  }

  // name -> the fleet's view of a shared breaker, from the latest frame.
  let shared = new Map();

  function updateFleet(f) {
    const box = document.getElementById("fleet");
    box.hidden = !f;
    shared = new Map(f ? f.breakers.map((s) => [s.name, s]) : []);
    if (!f) return;
    box.dataset.connected = String(f.connected);
    const link = f.connected
      ? "connected"
      : "disconnected since " + new Date(f.disconnected_since_unix_ms).toLocaleTimeString() + " (" + dur(f.disconnected_for_ms || 0) + ")";
    box.replaceChildren(
      el("b", "", "fleet " + f.namespace), el("span", "", "node " + f.node),
      el("span", "link", link), el("span", "", f.breakers.length + " shared"),
    );
  }

  function updateBreaker(b) {
    let t = tiles.get(b.name);
    if (!t) { t = breakerTile(b); tiles.set(b.name, t); }
    const p = t.p;
    t.root.dataset.state = b.state;
    p.state.dataset.state = b.state;
    p.state.textContent = b.state.replace("_", " ");
    const s = shared.get(b.name);
    p.fleet.hidden = !s;
    if (s) {
      p.fleet.dataset.state = s.fleet_state;
      p.fleet.textContent = "fleet: " + s.fleet_state.replace("_", " ") +
        (s.open_remaining_ms !== null ? " (" + dur(s.open_remaining_ms) + " left)" : "");
    }
    const tagKey = JSON.stringify(b.tags);
    if (tagKey !== t.tagKey) {
      t.tagKey = tagKey;
      p.tags.replaceChildren(...Object.entries(b.tags).map(([k, v]) => el("span", "tag", k + "=" + v)));
    }
    p.calls.textContent = rate(b.call_rate);
    p.failures.textContent = rate(b.failure_call_rate);
    p.rejected.textContent = rate(b.rejected_rate);
    p.rejected.title = b.rejected + " rejected in total";
    p.since.textContent = dur(b.since_ms);
    setBar(p.failure, b.failure_rate, b.failure_threshold);
    setBar(p.slow, b.slow_call_rate, b.slow_call_threshold);
    p.slow.root.hidden = b.slow_call_threshold === null && b.slow_call_rate === 0;
    const slow = b.slow_call_threshold !== null || b.slow_call_rate > 0;
    drawTrend(p.trend, history.get(b.name) || [], [b.failure_threshold, b.slow_call_threshold], slow);
  }

  function updateBulkhead(h) {
    let t = bulkTiles.get(h.name);
    if (!t) {
      const root = el("div", "tile"); root.dataset.name = h.name; root.dataset.kind = "bulkhead";
      const head = el("div", "head"); head.append(el("span", "name", h.name));
      const tags = el("div", "tags");
      const stats = el("div", "stats");
      const p = { tags, inUse: stat(stats, "in use"), limit: stat(stats, "limit"), waiting: stat(stats, "waiting"), rejected: stat(stats, "rejected/s"), use: bar("slots taken") };
      root.append(head, tags, stats, p.use.root);
      t = { root, p }; bulkTiles.set(h.name, t);
    }
    const p = t.p;
    p.tags.replaceChildren(...Object.entries(h.tags).map(([k, v]) => el("span", "tag", k + "=" + v)));
    p.inUse.textContent = String(h.in_use); p.limit.textContent = String(h.limit);
    p.waiting.textContent = String(h.waiting); p.rejected.textContent = rate(h.rejected_rate);
    p.rejected.title = h.rejected + " rejected in total";
    setBar(p.use, h.limit ? h.in_use / h.limit : 0, null);
    p.use.val.textContent = h.in_use + " of " + h.limit;
  }

  function updatePolicy(key, pol, t_ms, append) {
    const h = policyHistory.get(key) || [];
    const last = h[h.length - 1];
    if (!last || (append && last[0] < t_ms)) {
      h.push([t_ms, ...pol.figures.map((f) => f.value)]);
      while (h.length > historyLen) h.shift();
    }
    policyHistory.set(key, h);
    let t = policyTiles.get(key);
    if (!t) {
      const root = el("div", "tile"); root.dataset.name = pol.name; root.dataset.kind = pol.kind;
      const head = el("div", "head"); const mode = el("span", "mode");
      head.append(el("span", "name", pol.name), mode);
      const kind = el("div", "kind", pol.kind.replace(/_/g, " "));
      const tags = el("div", "tags");
      const stats = el("div", "stats");
      const figures = pol.figures.map((f) => stat(stats, f.name.replace(/_/g, " ") + (f.kind === "counter" ? "/s" : "")));
      const charts = gaugeCharts(pol.figures);
      root.append(head, kind, tags, stats, ...charts.map((g) => g.root));
      t = { root, p: { mode, tags, stats, figures, charts, names: pol.figures.map((f) => f.name).join() } };
      policyTiles.set(key, t);
    }
    const p = t.p;
    t.root.dataset.mode = pol.mode;
    p.mode.dataset.mode = pol.mode; p.mode.textContent = pol.mode;
    p.tags.replaceChildren(...Object.entries(pol.tags).map(([k, v]) => el("span", "tag", k + "=" + v)));
    if (p.names !== pol.figures.map((f) => f.name).join()) {
      // A policy whose figures changed: a fresh tile (and history) next frame.
      policyTiles.delete(key); policyHistory.delete(key); t.root.remove(); return;
    }
    drawGauges(p.charts, h);
    pol.figures.forEach((f, i) => {
      const b = p.figures[i];
      b.textContent = f.kind === "counter" ? rate(f.rate) : String(f.value);
      b.title = f.help + (f.kind === "counter" ? ": " + f.value + " in total" : "");
    });
  }

  function place(container, map, names, forget = true) {
    for (const [name, t] of map) if (!names.has(name)) { t.root.remove(); map.delete(name); if (forget) history.delete(name); }
    const wanted = [...names].map((n) => map.get(n).root);
    if (wanted.length === 0) return;
    if (container.children.length !== wanted.length || wanted.some((r, i) => container.children[i] !== r)) container.replaceChildren(...wanted);
  }

  function apply(frame, append) {
    updateFleet(frame.fleet);
    for (const b of frame.breakers) {
      if (append) {
        const h = history.get(b.name) || [];
        const last = h[h.length - 1];
        if (!last || last[0] < frame.t_ms) {
          h.push([frame.t_ms, Math.max(0, states.indexOf(b.state)), b.call_rate, b.failure_rate, b.rejected_rate, b.slow_call_rate]);
          while (h.length > historyLen) h.shift();
        }
        history.set(b.name, h);
      }
      updateBreaker(b);
    }
    place(document.getElementById("breakers"), tiles, new Set(frame.breakers.map((b) => b.name)));
    for (const h of frame.bulkheads) updateBulkhead(h);
    place(document.getElementById("bulkheads"), bulkTiles, new Set(frame.bulkheads.map((h) => h.name)));
    document.getElementById("bh-title").hidden = frame.bulkheads.length === 0;
    const policies = (frame.policies || []).filter((pol) => !OWN_VIEW.has(pol.kind));
    const keys = new Set();
    for (const pol of policies) { const key = pol.kind + "\u0000" + pol.name; keys.add(key); updatePolicy(key, pol, frame.t_ms, append); }
    for (const key of [...keys]) if (!policyTiles.has(key)) keys.delete(key);
    for (const key of [...policyHistory.keys()]) if (!keys.has(key)) policyHistory.delete(key);
    place(document.getElementById("policies"), policyTiles, keys, false);
    document.getElementById("pol-title").hidden = keys.size === 0;
    document.body.dataset.frame = String(frame.t_ms);
  }

  function setConn(live, text) {
    const c = document.getElementById("conn");
    c.classList.toggle("live", live); c.textContent = text;
  }

  async function start() {
    const r = await fetch(base + "api/state", { cache: "no-store" });
    const s = await r.json();
    controls = s.controls; intervalMs = s.interval_ms; states = s.states;
    historyLen = s.history_len;
    for (const [name, points] of Object.entries(s.history)) history.set(name, points.slice());
    if (controls) {
      document.getElementById("ctl").hidden = false;
      document.getElementById("token").value = sessionStorage.getItem("fusebox-token") || "";
    }
    apply(s.frame, false);
    const es = new EventSource(base + "api/stream");
    es.addEventListener("open", () => setConn(true, "live"));
    es.addEventListener("error", () => setConn(false, "reconnecting"));
    es.addEventListener("frame", (e) => apply(JSON.parse(e.data), true));
  }

  start().catch((e) => setConn(false, "error: " + e.message));
})();
