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
      spark: document.createElementNS(SVG, "svg"), rejectedTotal: null, msg: el("div", "msg"),
    };
    p.spark.setAttribute("class", "spark"); p.spark.setAttribute("viewBox", "0 0 300 54"); p.spark.setAttribute("preserveAspectRatio", "none");
    const legend = el("div", "legend");
    const key = (color, text) => { const k = el("span", "", text); const i = el("i"); i.style.background = color; k.prepend(i); return k; };
    p.slowLegend = key("#ef6c00", "slow-call rate");
    legend.append(key("#1570ef", "calls/s"), key("#c62828", "failure rate"), p.slowLegend, key("#98a2b3", "threshold"));
    root.append(head, fleet, tags, stats, p.failure.root, p.slow.root, p.spark, legend);
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

  function drawSpark(svg, points, thresholds, slow) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    if (points.length === 0) return;
    const W = 300, H = 54;
    // The ring's span once full; until then the points there are, stretched
    // (at least ten intervals wide).
    const tEnd = points[points.length - 1][0];
    const tStart = Math.min(Math.max(tEnd - historyLen * intervalMs, points[0][0]), tEnd - 10 * intervalMs);
    const x = (t) => ((t - tStart) / (tEnd - tStart || 1)) * W;
    // State bands: one rectangle per run of the same state.
    let runStart = 0;
    for (let i = 1; i <= points.length; i++) {
      if (i === points.length || points[i][1] !== points[runStart][1]) {
        const s = states[points[runStart][1]] || "closed";
        if (s !== "closed") {
          const r = document.createElementNS(SVG, "rect");
          const x0 = x(points[runStart][0]); const x1 = i < points.length ? x(points[i][0]) : W;
          r.setAttribute("x", x0.toFixed(1)); r.setAttribute("y", "0");
          r.setAttribute("width", Math.max(1, x1 - x0).toFixed(1)); r.setAttribute("height", String(H));
          r.setAttribute("fill", STATE_COLOR[s]); r.setAttribute("opacity", "0.18");
          svg.append(r);
        }
        runStart = i;
      }
    }
    const line = (values, max, color) => {
      const pts = [];
      points.forEach((pt, i) => { const v = values[i]; if (v !== null && v !== undefined) pts.push(x(pt[0]).toFixed(1) + "," + (H - 2 - (v / max) * (H - 4)).toFixed(1)); });
      if (pts.length < 2) return;
      const pl = document.createElementNS(SVG, "polyline");
      pl.setAttribute("points", pts.join(" ")); pl.setAttribute("fill", "none");
      pl.setAttribute("stroke", color); pl.setAttribute("stroke-width", "1.5"); pl.setAttribute("vector-effect", "non-scaling-stroke");
      svg.append(pl);
    };
    const calls = points.map((p) => p[2]);
    const maxCalls = Math.max(1, ...calls.filter((v) => v !== null));
    line(calls, maxCalls, "#1570ef");
    line(points.map((p) => p[3]), 1, "#c62828");
    if (slow) line(points.map((p) => p[5]), 1, "#ef6c00");
    for (const threshold of thresholds) {
      if (threshold === null || threshold === undefined) continue;
      const l = document.createElementNS(SVG, "line");
      const y = (H - 2 - threshold * (H - 4)).toFixed(1);
      l.setAttribute("x1", "0"); l.setAttribute("x2", String(W)); l.setAttribute("y1", y); l.setAttribute("y2", y);
      l.setAttribute("stroke", "#98a2b3"); l.setAttribute("stroke-dasharray", "4 3"); l.setAttribute("vector-effect", "non-scaling-stroke");
      svg.append(l);
    }
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
    const slow = b.slow_call_threshold !== null;
    p.slowLegend.hidden = !slow;
    drawSpark(p.spark, history.get(b.name) || [], [b.failure_threshold, b.slow_call_threshold], slow);
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

  function updatePolicy(key, pol) {
    let t = policyTiles.get(key);
    if (!t) {
      const root = el("div", "tile"); root.dataset.name = pol.name; root.dataset.kind = pol.kind;
      const head = el("div", "head"); const mode = el("span", "mode");
      head.append(el("span", "name", pol.name), mode);
      const kind = el("div", "kind", pol.kind.replace(/_/g, " "));
      const tags = el("div", "tags");
      const stats = el("div", "stats");
      const figures = pol.figures.map((f) => stat(stats, f.name.replace(/_/g, " ") + (f.kind === "counter" ? "/s" : "")));
      root.append(head, kind, tags, stats);
      t = { root, p: { mode, tags, stats, figures, names: pol.figures.map((f) => f.name).join() } };
      policyTiles.set(key, t);
    }
    const p = t.p;
    t.root.dataset.mode = pol.mode;
    p.mode.dataset.mode = pol.mode; p.mode.textContent = pol.mode;
    p.tags.replaceChildren(...Object.entries(pol.tags).map(([k, v]) => el("span", "tag", k + "=" + v)));
    if (p.names !== pol.figures.map((f) => f.name).join()) {
      // A policy whose figures changed: a fresh tile next frame.
      policyTiles.delete(key); t.root.remove(); return;
    }
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
    for (const pol of policies) { const key = pol.kind + "\u0000" + pol.name; keys.add(key); updatePolicy(key, pol); }
    for (const key of [...keys]) if (!policyTiles.has(key)) keys.delete(key);
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
