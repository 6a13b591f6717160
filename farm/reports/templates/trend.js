/* agent-farm trend page: per-case pass-rate lines with intervals, label changes, the sweeps table.
   Built from #farm-data; every value reaches the page through textContent, never as markup. */
(() => {
  "use strict";
  const data = JSON.parse(document.getElementById("farm-data").textContent);
  const sweeps = data.sweeps || [];
  const cases = data.cases || [];
  const $ = (id) => document.getElementById(id);
  const el = farmUi.el;
  const SVG = "http://www.w3.org/2000/svg";
  const W = 340, H = 64, PAD = 6, LEFT = 30, BOTTOM = 12, PAGE = 100;
  const state = { query: "", filter: "all", limit: PAGE };

  function svg(tag, attrs) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    return node;
  }
  const latest = (c) => [...c.points].reverse().find((p) => p && p.label !== "skipped");
  const FILTERS = [
    ["all", "All", () => true],
    ["flagged", "Newly flaky, broken or fallen", (c) => !!c.flag],
    ["changed", "Changed label", (c) => (c.changes || []).length > 0],
    ["trouble", "Flaky or broken now", (c) => { const p = latest(c); return !!p && p.label !== "stable"; }],
  ];

  function chart(c) {
    const n = Math.max(1, sweeps.length - 1);
    const x = (i) => LEFT + ((W - LEFT - PAD) * (sweeps.length === 1 ? 0.5 : i / n));
    const y = (rate) => PAD + (H - PAD - BOTTOM) * (1 - rate / 100);
    const box = svg("svg", { viewBox: "0 0 " + W + " " + H, role: "img" });
    box.appendChild(svg("title", {})).textContent = c.id + ": pass rate over " + sweeps.length + " sweeps";
    // axes: pass rate 0–100 % up the left, the sweeps oldest to newest along the bottom
    box.appendChild(svg("line", { class: "axis", x1: LEFT, y1: y(100), x2: LEFT, y2: y(0) }));
    box.appendChild(svg("line", { class: "axis", x1: LEFT, y1: y(0), x2: W - PAD, y2: y(0) }));
    for (const [rate, text] of [[100, "100%"], [50, "50%"], [0, "0%"]]) {
      box.appendChild(svg("text", { class: "tick", x: LEFT - 3, y: y(rate) + 3, "text-anchor": "end" })).textContent = text;
    }
    box.appendChild(svg("text", { class: "tick", x: LEFT, y: H - 2 })).textContent = "oldest";
    box.appendChild(svg("text", { class: "tick", x: W - PAD, y: H - 2, "text-anchor": "end" })).textContent = "newest sweep";
    let segment = [];
    const flush = () => {
      if (!segment.length) return;
      const upper = segment.map(([i, p]) => x(i) + "," + y(p.ci_high));
      const lower = segment.map(([i, p]) => x(i) + "," + y(p.ci_low)).reverse();
      box.appendChild(svg("polygon", { class: "band", points: upper.concat(lower).join(" ") }));
      box.appendChild(svg("polyline", { class: "line", points: segment.map(([i, p]) => x(i) + "," + y(p.pass_rate)).join(" ") }));
      segment = [];
    };
    c.points.forEach((p, i) => { if (p) segment.push([i, p]); else flush(); });
    flush();
    c.points.forEach((p, i) => {
      if (!p) return;
      const dot = box.appendChild(svg("circle", { class: "dot " + p.label, cx: x(i), cy: y(p.pass_rate), r: 2.6 }));
      dot.appendChild(svg("title", {})).textContent =
        p.sweep_id + ": " + p.pass_rate + "% (" + p.passed + "/" + (p.runs - p.skipped) + "), " + p.label;
    });
    return box;
  }

  // A judged criterion's flip rate over the recorded judge checks, as farm.history.trends.judge_trend_line words it.
  function judgeLine(j) {
    const rates = j.points.map((p) => p.judge_flip_rate == null ? "-" : Number((100 * p.judge_flip_rate).toPrecision(3)) + "%");
    const newest = j.points[j.points.length - 1];
    return j.check + " " + j.criterion + ": judge flip rate " + rates.join(" → ") + (newest.judge_noisy ? " NOISY" : "") +
      " (" + j.points.length + (j.points.length === 1 ? " check" : " checks") + ", newest " + newest.repeats +
      " verdicts × " + newest.outputs + " outputs)";
  }

  function item(c) {
    const li = el("li", "trend");
    li.dataset.case = c.id;
    const head = el("div");
    head.appendChild(el("div", "case-id", c.id));
    const now = latest(c);
    if (now) head.appendChild(el("span", "badge b-" + now.label, now.label + " " + now.pass_rate + "%"));
    if (c.flag) head.appendChild(el("span", "badge b-regressed flag", c.flag));
    li.appendChild(head);
    li.appendChild(chart(c));
    const changes = el("div", "changes");
    for (const ch of c.changes || []) changes.appendChild(el("div", "change", ch.from + " → " + ch.to + " at " + ch.sweep_id));
    if (!(c.changes || []).length) changes.textContent = "no label change";
    li.appendChild(changes);
    for (const ch of c.served_changes || []) {  // SPEC 25: the provider changed what served the case
      li.appendChild(el("div", "change served-changed", "served model changed at " + ch.sweep_id + ": " + ch.from + " → " + ch.to));
    }
    for (const m of c.criteria_moved || []) {
      li.appendChild(el("div", "change criterion-moved", "criterion moved: " + m.criterion + " " + m.base + " → " + m.head +
        " (" + (m.delta > 0 ? "+" : "") + m.delta + " points" +
        (m.judge_noisy && m.delta < 0 ? "; judge-noisy: the judge may explain it (farm judge-check)" : "") + ")"));
    }
    for (const j of (data.judge_checks || []).filter((j) => j.case === c.id)) {
      li.appendChild(el("div", "change judge-flips", judgeLine(j)));
    }
    return li;
  }

  function render() {
    const test = FILTERS.find((f) => f[0] === state.filter)[2];
    const shown = cases.filter((c) => test(c) && (!state.query || c.id.toLowerCase().includes(state.query)));
    const frag = document.createDocumentFragment();
    for (const c of shown.slice(0, state.limit)) frag.appendChild(item(c));
    if (!shown.length) frag.appendChild(el("li", "empty", cases.length ? "No case matches." : "No cases recorded."));
    $("cases").replaceChildren(frag);
    $("more").hidden = shown.length <= state.limit;
    const count = $("row-count");
    count.textContent = Math.min(shown.length, state.limit) + " shown, " + shown.length + " matching of " + cases.length + " cases";
    count.dataset.matching = String(shown.length);
  }

  function sweepRows() {
    const frag = document.createDocumentFragment();
    for (const s of [...sweeps].reverse()) {
      const tr = el("tr");
      const cells = [(s.started_at || "").replace("T", " ").slice(0, 16), s.sweep_id, s.status + (s.stopped ? " (" + s.stopped + ")" : ""), s.agent || ""];
      for (const v of cells) tr.appendChild(el("td", null, v));
      for (const v of [s.total_cases, s.overall_pass_rate + "%", s.flaky_cases, s.broken_cases]) tr.appendChild(el("td", "num", v));
      tr.appendChild(el("td", null, s.git_commit ? (s.git_branch ? s.git_branch + " " : "") + s.git_commit.slice(0, 10) : ""));
      tr.appendChild(el("td", null, Object.entries(s.tags || {}).map(([k, v]) => k + "=" + v).join(" ")));
      frag.appendChild(tr);
    }
    $("sweep-rows").replaceChildren(frag);
  }


  $("filter").addEventListener("input", (e) => { state.query = e.target.value.trim().toLowerCase(); state.limit = PAGE; render(); });
  $("more").addEventListener("click", () => { state.limit += PAGE; render(); });
  farmUi.chips($("chips"), FILTERS, cases, state.filter, (key) => { state.filter = key; state.limit = PAGE; render(); });
  sweepRows();
  render();
  document.documentElement.dataset.ready = "1";
})();
