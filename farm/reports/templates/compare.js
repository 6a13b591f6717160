/* agent-farm comparison page: builds the cases table from #farm-data.
   Every value reaches the page through textContent, never as markup. */
(() => {
  "use strict";
  const data = JSON.parse(document.getElementById("farm-data").textContent);
  const cases = data.cases || [];
  const $ = (id) => document.getElementById(id);
  const el = farmUi.el;
  const ORDER = ["regressed", "improved", "inconclusive", "new", "removed", "not_run", "unchanged"];
  const state = { query: "", filter: "attention" };

  function notes(c) {
    const out = [];
    if (c.class_change) out.push(c.class_change.base + " → " + c.class_change.head);
    if (c.content_changed) out.push("test changed");
    if (c.adaptive) out.push("adaptive: verdicts only");
    for (const r of c.new_failure_reasons || []) out.push("new failure: " + r);
    for (const m of c.criteria_moved || []) {
      const noisy = m.judge_noisy && m.delta < 0 ? "; judge-noisy: the judge may explain it (farm judge-check)" : "";
      out.push("criterion moved: " + m.criterion + " " + m.base + " → " + m.head + " (" + (m.delta > 0 ? "+" : "") + m.delta + " points" + noisy + ")");
    }
    if (c.path_changed) out.push(pathChange(c));  // worded as farm.reports.comparison.path_change_text
    if (c.served_changed && c.served) out.push("served model changed: " + c.served[0] + " → " + c.served[1]);
    return out;
  }
  function pathChange(c) {
    const g = c.path_grew, q = "(q " + Number(c.path_q_value.toPrecision(3)) + ")";
    if (!g) return "path changed " + q;
    const path = g.path.length ? g.path.join(" → ") : "(no tool call)";
    const head = Math.round(g.head_share * 100) + " % of runs";
    if (g.base_share === 0) return "path changed: a new path " + path + " in " + head + " " + q;
    return "path changed: " + path + " " + Math.round(g.base_share * 100) + " % → " + head + " " + q;
  }
  function counts(side) {
    if (!side) return "—";
    const rate = side.runs ? Math.round((100 * side.passed) / side.runs) + "%" : "no runs";
    return side.passed + "/" + side.runs + " " + rate;
  }
  // An inconclusive case needs a look only when its pass rate fell by at least min_drop: most
  // inconclusive cases are small samples that moved a little, and listing them all hides the rest.
  const needsLook = (c) =>
    (c.verdict !== "unchanged" && c.verdict !== "inconclusive") || notes(c).length > 0 ||
    (c.verdict === "inconclusive" && c.delta !== null && c.delta <= -data.min_drop);
  const num = (v, f) => (v === null || v === undefined ? "" : f(v));
  const FILTERS = [
    ["attention", "Needs a look", needsLook],
    ["all", "All", () => true],
    ...ORDER.map((v) => [v, v, (c) => c.verdict === v]),
  ];

  function row(c) {
    const tr = el("tr");
    tr.dataset.verdict = c.verdict;
    const badge = el("span", "badge b-" + c.verdict, c.verdict);
    tr.appendChild(el("td")).appendChild(badge);
    tr.appendChild(el("td", "case-id", c.id));
    tr.appendChild(el("td", "num", counts(c.base)));
    tr.appendChild(el("td", "num", counts(c.head)));
    tr.appendChild(el("td", "num", num(c.delta, (d) => (d > 0 ? "+" : "") + d.toFixed(1))));
    tr.appendChild(el("td", "num", num(c.p_value, (p) => p.toPrecision(3))));
    tr.appendChild(el("td", "num", num(c.q_value, (q) => q.toPrecision(3))));
    const list = el("ul", "notes");
    for (const n of notes(c)) list.appendChild(el("li", null, n));
    tr.appendChild(el("td")).appendChild(list);
    return tr;
  }

  function render() {
    const test = FILTERS.find((f) => f[0] === state.filter)[2];
    const q = state.query;
    const shown = cases.filter((c) => test(c) && (!q || c.id.toLowerCase().includes(q)));
    shown.sort((a, b) => ORDER.indexOf(a.verdict) - ORDER.indexOf(b.verdict) || (a.delta || 0) - (b.delta || 0));
    const frag = document.createDocumentFragment();
    for (const c of shown) frag.appendChild(row(c));
    if (!shown.length) {
      const td = el("td", "empty", cases.length ? "No case matches." : "No cases.");
      td.colSpan = 8;
      frag.appendChild(el("tr")).appendChild(td);
    }
    $("rows").replaceChildren(frag);
    const count = $("row-count");
    count.textContent = shown.length + " of " + cases.length + " cases";
    count.dataset.matching = String(shown.length);
  }


  $("filter").addEventListener("input", (e) => { state.query = e.target.value.trim().toLowerCase(); render(); });
  farmUi.chips($("chips"), FILTERS, cases, state.filter, (key) => { state.filter = key; render(); });
  render();
  document.documentElement.dataset.ready = "1";
})();
