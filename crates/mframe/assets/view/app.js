// mframe view: the page. The server pushes updates over /ws (at most 20 a
// second, only what changed); this script keeps the rows, the points of the
// charts it asked for, and draws them. window.mframeView is its state, for
// people with a console and for the browser tests.
//
// Charts: until the user picks rows, the page charts the most active
// numeric rows by itself (auto: one chart each, re-picked every second).
// The user's charts are kept in the address, `#charts=ROW,ROW;ROW`, a row
// being `source/device/param` (device and param URI-encoded), so that a
// reload or a shared link shows the same charts.
//
// Everything is in this file and the stylesheet (no inline script or
// style), so the page runs under a `default-src 'self'` policy.
"use strict";
(() => {
  const MAX_SHOWN = 500; // table rows in the DOM at once
  const MAX_ERRORS_SHOWN = 100;
  const AUTO_CHARTS = 4; // rows charted by themselves until the user picks
  const AUTO_EVERY_MS = 1000; // how often the auto charts are re-picked
  const COLORS = ["#1565c0", "#c62828", "#2e7d32", "#6a1b9a", "#ef6c00", "#00838f", "#5d4037", "#ad1457"];
  const $ = (s) => document.querySelector(s);

  const view = (window.mframeView = {
    updates: 0, // updates received
    updateRate: 0, // updates in the last whole second
    rows: new Map(), // id -> row as pushed
    series: new Map(), // id -> {x: seconds[], v: number[]}
    charts: [], // {el, ids: [], pending: [row keys not seen yet], plot, auto}
    active: null,
    auto: false, // charting the most active rows until the user picks
    idOfKey: new Map(), // row key (as in the address) -> id
    clockOffset: 0, // Date.now() - server's now
    limits: null,
    errorCount: 0,
    last: null, // the last update, as received
  });

  let ws = null;
  let tableDirty = true;
  const trOf = new Map(); // id -> <tr>

  function setConn(text, cls) {
    const el = $("#conn");
    el.textContent = text;
    el.className = "conn " + cls;
  }

  function connect() {
    ws = new WebSocket(`ws://${location.host}/ws`);
    ws.onopen = () => {
      setConn("live", "up");
      // A new connection starts from nothing on the server: ask again.
      for (const s of view.series.values()) s.stale = true;
      sendCharts();
    };
    ws.onclose = () => {
      setConn("disconnected, retrying", "down");
      setTimeout(connect, 1000);
    };
    ws.onmessage = (e) => apply(JSON.parse(e.data));
  }

  function sendCharts() {
    if (ws && ws.readyState === WebSocket.OPEN) {
      const ids = [...new Set(view.charts.flatMap((c) => c.ids))];
      ws.send(JSON.stringify({ charts: ids }));
    }
  }

  // ---- updates -----------------------------------------------------------

  let ratePrev = 0;
  setInterval(() => {
    view.updateRate = view.updates - ratePrev;
    ratePrev = view.updates;
  }, 1000);

  function apply(u) {
    view.updates++;
    view.last = u;
    view.clockOffset = Date.now() - u.now;
    view.limits = u.limits;
    const changed = [];
    let newRows = false;
    for (const r of u.rows) {
      if (!view.rows.has(r.id)) {
        tableDirty = true;
        newRows = true;
        view.idOfKey.set(rowKey(r), r.id);
      }
      view.rows.set(r.id, r);
      changed.push(r.id);
    }
    if (newRows) resolvePending();
    const dirtyCharts = new Set();
    for (const [key, s] of Object.entries(u.series)) {
      const id = Number(key);
      let d = view.series.get(id);
      if (!d || s.reset || d.stale) {
        d = { x: [], v: [] };
        view.series.set(id, d);
      }
      let i = 0;
      // The server sends its last point again when that millisecond got a
      // newer value.
      if (d.x.length && s.t.length && s.t[0] / 1000 === d.x[d.x.length - 1]) {
        d.v[d.v.length - 1] = s.v[0];
        i = 1;
      }
      for (; i < s.t.length; i++) {
        d.x.push(s.t[i] / 1000);
        d.v.push(s.v[i]);
      }
      const extra = d.x.length - u.limits.points;
      if (extra > 0) {
        d.x.splice(0, extra);
        d.v.splice(0, extra);
      }
      view.charts.forEach((c, n) => {
        if (c.ids.includes(id)) dirtyCharts.add(n);
      });
    }
    choices("#filter-source", u.sources.map((s) => s.source));
    choices("#filter-target", u.targets);
    choices("#filter-type", u.types);
    if (tableDirty) renderTable();
    else {
      const f = currentFilter();
      for (const id of changed) refreshRow(id, f);
    }
    for (const n of dirtyCharts) drawChart(view.charts[n]);
    autoPick();
    renderSources(u);
    renderAttachments(u.attachments);
    renderErrors(u);
    renderTotals(u);
  }

  function choices(sel, values) {
    const el = $(sel);
    const have = new Set([...el.options].map((o) => o.value));
    for (const v of values) {
      if (!have.has(String(v))) {
        const o = document.createElement("option");
        o.value = o.textContent = String(v);
        el.appendChild(o);
      }
    }
  }

  // ---- the table ---------------------------------------------------------

  // The filters as set now (read once per table render, not per row).
  function currentFilter() {
    return {
      src: $("#filter-source").value,
      tgt: $("#filter-target").value,
      typ: $("#filter-type").value,
      text: $("#filter-text").value.trim().toLowerCase(),
    };
  }

  function passes(r, f = currentFilter()) {
    return (
      (f.src === "" || String(r.source) === f.src) &&
      (f.tgt === "" || String(r.target) === f.tgt) &&
      (f.typ === "" || String(r.type) === f.typ) &&
      (f.text === "" || r.key.toLowerCase().includes(f.text))
    );
  }

  function renderTable() {
    tableDirty = false;
    const body = $("#rows tbody");
    body.textContent = "";
    trOf.clear();
    let matching = 0;
    const f = currentFilter();
    for (const r of view.rows.values()) {
      if (!passes(r, f)) continue;
      matching++;
      if (matching > MAX_SHOWN) continue;
      const tr = document.createElement("tr");
      tr.dataset.id = r.id;
      tr.dataset.key = rowKey(r);
      for (const c of ["source", "key", "target", "type", "kind", "value", "age", "rate", "count"]) {
        const td = document.createElement("td");
        td.className = c;
        if (["value", "age", "rate", "count"].includes(c)) td.classList.add("num");
        tr.appendChild(td);
      }
      body.appendChild(tr);
      trOf.set(r.id, tr);
      refreshRow(r.id);
    }
    $("#shown").textContent =
      matching > MAX_SHOWN
        ? `showing ${MAX_SHOWN} of ${matching} matching rows (${view.rows.size} tracked): narrow the filter`
        : `${matching} of ${view.rows.size} rows`;
  }

  function fmtValue(r) {
    if (r.kind === "string") return r.value;
    return String(r.value);
  }

  function fmtAge(ms) {
    if (ms < 0) ms = 0;
    if (ms < 10000) return (ms / 1000).toFixed(1) + " s";
    if (ms < 120000) return Math.round(ms / 1000) + " s";
    if (ms < 7200000) return Math.round(ms / 60000) + " min";
    return Math.round(ms / 3600000) + " h";
  }

  function refreshRow(id, f = currentFilter()) {
    const tr = trOf.get(id);
    const r = view.rows.get(id);
    if (!tr || !r) return;
    if (!passes(r, f)) {
      tableDirty = true; // its target or type changed
      return;
    }
    const cells = tr.children;
    cells[0].textContent = r.source;
    cells[1].textContent = r.key;
    cells[1].title = r.key;
    cells[2].textContent = r.target;
    cells[3].textContent = r.type;
    cells[4].textContent = r.kind;
    tr.classList.toggle("uncharted", r.chart_refused);
    cells[4].title = r.chart_refused ? "not charted: more numeric rows than --max-charted" : "";
    cells[5].textContent = fmtValue(r);
    cells[5].title = fmtValue(r);
    cells[7].textContent = r.rate;
    cells[8].textContent = r.count;
    tr.classList.toggle("numeric", r.charted);
    refreshAge(tr, r);
  }

  function refreshAge(tr, r) {
    tr.children[6].textContent = fmtAge(Date.now() - view.clockOffset - r.seen);
  }

  setInterval(() => {
    for (const [id, tr] of trOf) refreshAge(tr, view.rows.get(id));
  }, 500);

  for (const sel of ["#filter-source", "#filter-target", "#filter-type"]) {
    $(sel).addEventListener("change", renderTable);
  }
  $("#filter-text").addEventListener("input", renderTable);

  $("#rows tbody").addEventListener("click", (e) => {
    const tr = e.target.closest("tr");
    if (!tr) return;
    const r = view.rows.get(Number(tr.dataset.id));
    if (r && r.charted) toggleChart(r.id);
  });

  // ---- charts ------------------------------------------------------------

  // A row's identity across viewers and restarts (ids are not): the key of
  // the address.
  function rowKey(r) {
    return `${r.source}/${encodeURIComponent(r.device)}/${encodeURIComponent(r.param)}`;
  }

  function newChart(auto = false) {
    const el = document.createElement("div");
    el.className = auto ? "chart auto" : "chart";
    const bar = document.createElement("div");
    bar.className = "bar";
    const title = document.createElement("span");
    const close = document.createElement("button");
    close.type = "button";
    close.textContent = "close";
    bar.append(title, close);
    const plot = document.createElement("div");
    el.append(bar, plot);
    $("#charts").appendChild(el);
    const chart = { el, titleEl: title, plotEl: plot, ids: [], pending: [], plot: null, auto };
    view.charts.push(chart);
    el.addEventListener("click", () => activate(chart));
    close.addEventListener("click", (e) => {
      e.stopPropagation();
      leaveAuto();
      closeChart(chart);
      if (view.active) activate(view.active);
      chartsChanged();
    });
    if (!auto) activate(chart);
    return chart;
  }

  function closeChart(chart) {
    if (chart.plot) chart.plot.destroy();
    chart.el.remove();
    view.charts = view.charts.filter((c) => c !== chart);
    if (view.active === chart) view.active = view.charts.filter((c) => !c.auto).pop() || null;
  }

  function closeAll() {
    for (const c of [...view.charts]) closeChart(c);
    view.active = null;
  }

  function activate(chart) {
    if (chart.auto) return;
    view.active = chart;
    for (const c of view.charts) c.el.classList.toggle("active", c === chart);
  }

  // After any change of the charted rows: the server, the table's marks,
  // the titles, the address, the header.
  function chartsChanged() {
    markCharted();
    sendCharts();
    view.charts.forEach((c, i) => {
      c.titleEl.textContent = chartTitle(c, i);
    });
    $("#chart-note").textContent = view.auto
      ? `Charting the ${AUTO_CHARTS} most active numeric rows by themselves; click rows to choose your own charts.`
      : "";
    writeHash();
    if (view.last) renderTotals(view.last);
  }

  function chartTitle(chart, i) {
    if (chart.auto) return `most active: ${label(chart.ids[0])}`;
    const waiting = chart.pending.length ? ` (waiting for ${chart.pending.map(decodeKey).join(", ")})` : "";
    return `chart ${i + 1}${waiting}`;
  }

  function decodeKey(k) {
    const [source, device, param] = k.split("/");
    try {
      return `${decodeURIComponent(device)}.${decodeURIComponent(param)} (source ${source})`;
    } catch (e) {
      return k;
    }
  }

  // The auto charts end at the user's first choice: a row clicked or a new
  // chart replaces them; closing one keeps the others as the user's.
  function leaveAuto(replace = false) {
    if (!view.auto) return;
    view.auto = false;
    if (replace) closeAll();
    for (const c of view.charts) {
      c.auto = false;
      c.el.classList.remove("auto");
      if (c.plot) {
        c.plot.destroy();
        c.plot = null;
        drawChart(c);
      }
    }
    view.active = view.charts[view.charts.length - 1] || null;
    if (view.active) activate(view.active);
  }

  $("#new-chart").addEventListener("click", () => {
    leaveAuto(true);
    newChart();
    chartsChanged();
  });

  function toggleChart(id) {
    leaveAuto(true);
    const chart = view.active || newChart();
    const at = chart.ids.indexOf(id);
    if (at >= 0) chart.ids.splice(at, 1);
    else chart.ids.push(id);
    if (chart.plot) {
      chart.plot.destroy();
      chart.plot = null;
    }
    chartsChanged();
    drawChart(chart);
  }

  // Until the user picks: the AUTO_CHARTS numeric rows updated most often
  // (a row already shown stays unless another is more than twice as
  // active, so that the charts do not jump between rows of equal rates).
  let lastAutoPick = 0;
  function autoPick(force = false) {
    if (!view.auto) return;
    const now = Date.now();
    if (!force && view.charts.length > 0 && now - lastAutoPick < AUTO_EVERY_MS) return;
    lastAutoPick = now;
    const shown = new Set(view.charts.flatMap((c) => c.ids));
    const score = (r) => r.rate * (shown.has(r.id) ? 2 : 1);
    const picked = [...view.rows.values()]
      .filter((r) => r.charted)
      .sort((a, b) => score(b) - score(a) || shown.has(b.id) - shown.has(a.id) || b.count - a.count || a.id - b.id)
      .slice(0, AUTO_CHARTS)
      .map((r) => r.id);
    if (picked.length === shown.size && picked.every((id) => shown.has(id))) return;
    for (const c of [...view.charts]) if (!picked.includes(c.ids[0])) closeChart(c);
    for (const id of picked) {
      if (!view.charts.some((c) => c.ids[0] === id)) newChart(true).ids.push(id);
    }
    chartsChanged();
    view.charts.forEach(drawChart);
  }

  // ---- the address: #charts=ROW,ROW;ROW ------------------------------------

  function writeHash() {
    if (view.auto) return;
    const charts = view.charts.map((c) =>
      [...c.ids.map((id) => view.rows.get(id)).filter(Boolean).map(rowKey), ...c.pending].join(","),
    );
    const hash = "#charts=" + charts.join(";");
    if (location.hash !== hash) history.replaceState(null, "", hash);
  }

  // The charts the address asks for (lists of row keys), or null when it
  // asks for none (then the page charts the most active rows).
  function readHash() {
    if (!location.hash.startsWith("#charts=")) return null;
    const body = location.hash.slice("#charts=".length);
    return body === "" ? [] : body.split(";").map((c) => c.split(",").filter((k) => k !== ""));
  }

  function fromHash() {
    const wanted = readHash();
    closeAll();
    view.auto = wanted === null;
    lastAutoPick = 0;
    for (const keys of wanted || []) newChart().pending = keys;
    resolvePending();
    view.charts.forEach(drawChart);
    chartsChanged();
    autoPick(true);
  }

  // Rows of the address that have arrived go on their charts; those that
  // cannot be charted (strings, rows beyond --max-charted) are dropped.
  function resolvePending() {
    let changed = false;
    for (const c of view.charts) {
      const keep = [];
      for (const k of c.pending) {
        const id = view.idOfKey.get(k);
        const r = id === undefined ? null : view.rows.get(id);
        if (!r) keep.push(k);
        else if (r.charted && !c.ids.includes(id)) c.ids.push(id);
      }
      if (keep.length !== c.pending.length) {
        c.pending = keep;
        changed = true;
        if (c.plot) {
          c.plot.destroy();
          c.plot = null;
        }
        drawChart(c);
      }
    }
    if (changed) chartsChanged();
  }

  window.addEventListener("hashchange", fromHash);

  function markCharted() {
    const colorOf = new Map();
    for (const c of view.charts) c.ids.forEach((id, i) => colorOf.set(id, COLORS[i % COLORS.length]));
    for (const [id, tr] of trOf) {
      tr.classList.toggle("charted", colorOf.has(id));
      if (colorOf.has(id)) tr.style.setProperty("--series", colorOf.get(id));
    }
  }

  function label(id) {
    const r = view.rows.get(id);
    return r ? `${r.key} (source ${r.source})` : `row ${id}`;
  }

  function chartData(chart) {
    const tables = chart.ids.map((id) => {
      const d = view.series.get(id) || { x: [], v: [] };
      return [d.x, d.v];
    });
    if (tables.length === 1) return [tables[0][0].slice(), tables[0][1].slice()];
    return uPlot.join(tables);
  }

  // Axis ticks short enough for the axis: 12.5, 1.5k, 2.4M, 1e+300.
  function shortNum(v) {
    const a = Math.abs(v);
    if (a === 0) return "0";
    if (a >= 1e15 || a < 1e-3) return v.toExponential(1);
    for (const [d, suffix] of [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]]) {
      if (a >= d) return +(v / d).toPrecision(4) + suffix;
    }
    return String(+v.toPrecision(4));
  }
  const yAxis = { size: 60, values: (u, vals) => vals.map(shortNum) };

  // A legend value: under the cursor when there is one, otherwise the
  // latest point (uPlot's default would read "--" until hovered).
  function legendNum(v) {
    return Number.isInteger(v) ? String(v) : String(+v.toPrecision(7));
  }
  function legendValue(u, v, si, idx) {
    if (idx == null) {
      const d = u.data[si];
      for (let i = d.length - 1; i >= 0; i--) if (d[i] != null) return legendNum(d[i]);
      return "--";
    }
    return v == null ? "--" : legendNum(v);
  }

  // The header time of the point under the cursor, or of the latest one:
  // local time to the millisecond, as the axis (uPlot's default legend
  // drops the milliseconds).
  function timeValue(u, v, si, idx) {
    const x = u.data[0];
    const t = idx == null ? x[x.length - 1] : v;
    if (t == null) return "--";
    const d = new Date(t * 1000);
    const p = (n, w = 2) => String(n).padStart(w, "0");
    return (
      `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
      `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`
    );
  }

  function drawChart(chart) {
    if (!chart) return;
    if (chart.ids.length === 0) {
      if (chart.plot) chart.plot.destroy();
      chart.plot = null;
      chart.plotEl.textContent = "";
      const empty = document.createElement("div");
      empty.className = "empty";
      empty.textContent = chart.pending.length
        ? "waiting for its rows to arrive"
        : "click a numeric row to chart it here";
      chart.plotEl.appendChild(empty);
      return;
    }
    const data = chartData(chart);
    if (chart.plot) {
      chart.plot.setData(data);
      chart.plot.setLegend(); // the latest values, unless hovered
      return;
    }
    chart.plotEl.textContent = "";
    const width = Math.max(300, chart.el.clientWidth - 10);
    chart.plot = new uPlot(
      {
        width,
        height: chart.auto ? 150 : 220,
        scales: { x: { time: true } },
        axes: [{}, yAxis],
        series: [
          { label: "header time", value: timeValue },
          ...chart.ids.map((id, i) => ({
            label: label(id),
            stroke: COLORS[i % COLORS.length],
            width: 1.5,
            spanGaps: true,
            value: legendValue,
          })),
        ],
      },
      data,
      chart.plotEl,
    );
  }

  // ---- sources, attachments, errors, totals --------------------------------

  function renderSources(u) {
    const body = $("#sources tbody");
    body.textContent = "";
    for (const s of u.sources) {
      const tr = document.createElement("tr");
      tr.dataset.source = s.source;
      tr.innerHTML = `<td></td><td class="num"></td><td class="num"></td>`;
      tr.children[0].textContent = s.source;
      tr.children[1].textContent = s.frames;
      tr.children[2].textContent = s.rate;
      body.appendChild(tr);
    }
    if (u.other_sources > 0) {
      const tr = document.createElement("tr");
      tr.innerHTML = `<td>other sources (not tracked)</td><td class="num"></td><td></td>`;
      tr.children[1].textContent = u.other_sources;
      body.appendChild(tr);
    }
  }

  const attachments = new Map(); // id -> attachment as pushed
  function renderAttachments(list) {
    if (list.length === 0) return;
    for (const a of list) {
      const known = attachments.has(a.id);
      attachments.set(a.id, a);
      if (known) {
        const tr = $(`#attachments tr[data-id="${a.id}"]`);
        if (tr) tr.children[2].textContent = a.len;
        continue;
      }
      const tr = document.createElement("tr");
      tr.dataset.id = a.id;
      tr.dataset.name = a.name;
      tr.innerHTML =
        `<td></td><td></td><td class="num"></td><td>` +
        `<select><option value="f32">f32</option><option value="i16">i16</option></select> ` +
        `<button type="button" data-mode="wave">waveform</button> ` +
        `<button type="button" data-mode="spectrum">spectrum</button></td>`;
      tr.children[0].textContent = a.source;
      tr.children[1].textContent = a.name;
      tr.children[2].textContent = a.len;
      for (const b of tr.querySelectorAll("button")) {
        b.disabled = !a.served;
        b.title = a.served ? "" : "larger than --max-attachment";
        b.addEventListener("click", () => drawAttachment(a.id, tr.querySelector("select").value, b.dataset.mode));
      }
      $("#attachments tbody").appendChild(tr);
    }
  }

  let attachmentPlot = null;
  async function drawAttachment(id, sample, mode) {
    const a = attachments.get(id);
    const res = await fetch(`/api/attachment?id=${id}`);
    const box = $("#attachment-plot");
    if (!res.ok) {
      box.textContent = await res.text();
      return;
    }
    const buf = await res.arrayBuffer();
    const dv = new DataView(buf);
    const size = sample === "f32" ? 4 : 2;
    const n = Math.floor(buf.byteLength / size);
    const y = new Float64Array(n);
    for (let i = 0; i < n; i++) y[i] = size === 4 ? dv.getFloat32(i * 4, true) : dv.getInt16(i * 2, true);
    let data;
    let xLabel;
    if (mode === "spectrum") {
      const mag = spectrum(y);
      const x = Array.from(mag, (_, i) => i / (2 * mag.length));
      data = [x, Array.from(mag)];
      xLabel = "frequency (× sample rate)";
    } else {
      data = [Array.from(y, (_, i) => i), Array.from(y)];
      xLabel = "sample";
    }
    if (attachmentPlot) attachmentPlot.destroy();
    box.textContent = "";
    box.dataset.drawn = `${a.name}:${sample}:${mode}:${data[0].length}`;
    attachmentPlot = new uPlot(
      {
        title: `${a.name} (source ${a.source}): ${n} × ${sample}, ${mode === "spectrum" ? "magnitude, dB" : "waveform"}`,
        width: Math.max(300, box.clientWidth - 10),
        height: 200,
        scales: { x: { time: false } },
        axes: [{}, yAxis],
        series: [{ label: xLabel }, { label: mode === "spectrum" ? "dB" : "value", stroke: "#1565c0", width: 1 }],
      },
      data,
      box,
    );
  }

  // Magnitude spectrum in dB of a Hann-windowed power-of-two prefix (at most
  // 65,536 samples): bins 0 .. n/2 - 1.
  function spectrum(y) {
    let n = 1;
    while (n * 2 <= y.length && n < 65536) n *= 2;
    const re = new Float64Array(n);
    const im = new Float64Array(n);
    for (let i = 0; i < n; i++) re[i] = y[i] * (0.5 - 0.5 * Math.cos((2 * Math.PI * i) / Math.max(1, n - 1)));
    for (let i = 1, j = 0; i < n; i++) {
      let bit = n >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) {
        [re[i], re[j]] = [re[j], re[i]];
        [im[i], im[j]] = [im[j], im[i]];
      }
    }
    for (let len = 2; len <= n; len <<= 1) {
      const ang = (-2 * Math.PI) / len;
      for (let i = 0; i < n; i += len) {
        for (let k = 0; k < len / 2; k++) {
          const wr = Math.cos(ang * k);
          const wi = Math.sin(ang * k);
          const ar = re[i + k + len / 2];
          const ai = im[i + k + len / 2];
          const xr = ar * wr - ai * wi;
          const xi = ar * wi + ai * wr;
          re[i + k + len / 2] = re[i + k] - xr;
          im[i + k + len / 2] = im[i + k] - xi;
          re[i + k] += xr;
          im[i + k] += xi;
        }
      }
    }
    const half = Math.max(1, n / 2);
    const out = new Float64Array(half);
    for (let i = 0; i < half; i++) out[i] = 10 * Math.log10(re[i] * re[i] + im[i] * im[i] + 1e-20);
    return out;
  }

  function renderErrors(u) {
    view.errorCount = u.error_count;
    const badge = $("#error-count");
    badge.textContent = u.error_count;
    badge.classList.toggle("zero", u.error_count === 0);
    const body = $("#errors tbody");
    for (const e of u.errors) {
      const tr = document.createElement("tr");
      tr.className = "error";
      tr.innerHTML = "<td></td><td></td><td></td>";
      tr.children[0].textContent = new Date(e.at).toLocaleTimeString();
      tr.children[1].textContent = e.origin;
      tr.children[2].textContent = e.message;
      body.insertBefore(tr, body.firstChild);
    }
    while (body.children.length > MAX_ERRORS_SHOWN) body.removeChild(body.lastChild);
  }

  function renderTotals(u) {
    const l = u.limits;
    const onCharts = new Set(view.charts.flatMap((c) => c.ids)).size;
    $("#totals").textContent =
      `${u.frames} frames · ${u.tracked} rows · ${onCharts} on charts · ` +
      `${view.updateRate} page updates/s`;
    $("#totals").title =
      `${onCharts} rows drawn on this page's charts; ${u.charted} numeric rows record points ` +
      `for charts (at most ${l.max_charted}, --max-charted)`;
    $("#limits").textContent =
      `rows: ${u.tracked} of at most ${l.max_keys} (--max-keys); ` +
      `numeric rows recording points for charts: ${u.charted} of at most ${l.max_charted} (--max-charted), ` +
      `${l.points} points each (--points); ` +
      `attachments served up to ${l.max_attachment} bytes (--max-attachment). ` +
      `Dropped: ${u.dropped_values} parameter values of keys beyond the limit, ` +
      `${u.dropped_attachments} attachments.`;
    $("#limits").dataset.dropped = u.dropped_values;
  }

  fromHash();
  connect();
})();
