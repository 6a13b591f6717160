/* agent-farm report: builds the results table from #farm-data.
   Every value from the report reaches the page through textContent, never as markup.
   Served by farm view (#farm-paging): #farm-data holds one page of the results; the filters, the
   search, the sort and the pager ask the view for each page (farm/view/table.py, same rules). */
(() => {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const raw = $("farm-data").textContent;
  const report = JSON.parse(raw);
  let cases = report.results || [];
  const paging = $("farm-paging") ? JSON.parse($("farm-paging").textContent) : null;
  const total = paging ? paging.total : cases.length;
  const state = { query: "", filter: "all", key: null, dir: 1, page: 0, size: 100, shown: [] };
  // the page the view sent last (paged): its matching count and pages; asked counts the requests
  const served = { matching: total, pages: Math.max(1, Math.ceil(total / state.size)), asked: 0 };
  const open = new Set();
  const haystacks = [];

  // ---------------------------------------------------------------- helpers
  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function add(parent, ...kids) {
    for (const kid of kids) if (kid) parent.appendChild(kid);
    return parent;
  }
  const nf = new Intl.NumberFormat("en-US");
  const pct = (x) => (Number.isInteger(x) ? String(x) : x.toFixed(1)) + "%";
  // The same format as farm.durations.format_ms, which renders the rest of the page.
  const ms = (v) => (v < 1000 ? Math.round(v) + "ms" : (v / 1000).toFixed(1) + "s");
  // The same formats as farm.reports.fleet: an unknown cost is "unknown", never $0.
  const usd = (v) => (v === null || v === undefined ? "unknown" : v <= 0 ? "$0"
    : v >= 1 ? "$" + v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })
    : "$" + v.toFixed(Math.min(12, 2 - Math.floor(Math.log10(v)))));
  function tokens(u) {
    if (!u || !Object.keys(u).length) return "unknown";
    const main = [["input_tokens", "in"], ["output_tokens", "out"]].filter(([k]) => k in u).map(([k, w]) => nf.format(u[k]) + " " + w);
    const extra = [["cached_tokens", "cached"], ["reasoning_tokens", "reasoning"]].filter(([k]) => k in u).map(([k, w]) => nf.format(u[k]) + " " + w);
    return main.join(" / ") + (extra.length ? " (" + extra.join(", ") + ")" : "");
  }
  function adaptiveText(c) {
    if (!c.adaptive) return null;
    if (!c.adaptive_verdict) return "adaptive, undecided";
    return "decided " + c.adaptive_verdict + " after " + c.decided_after + " runs, " + c.runs_saved + " saved";
  }
  function show(v) {
    if (typeof v === "string") return v;
    const flat = JSON.stringify(v === undefined ? null : v);
    return flat.length <= 100 ? flat : JSON.stringify(v, null, 2);
  }
  function pre(value) {
    const node = el("pre", value === null || value === undefined ? "val null" : "val", show(value));
    return node;
  }
  function badge(text, kind) { return el("span", "badge b-" + kind, text); }
  function quarantineBadge(c) {  // farm-quarantine.toml: runs and is reported, does not gate until it expires
    const q = c.quarantine;
    if (!q) return null;
    const word = q.status === "expired" ? "quarantine expired" : "quarantined";
    const b = badge(word, q.status === "expired" ? "fail" : "quarantined");
    b.classList.add("quarantine");
    b.title = q.owner + (q.reason ? ": " + q.reason : "") + ", until " + q.until;
    return add(el("span", "quarantine-note"), b, el("span", "sub", b.title));
  }
  function verdictOf(c) { return c.label === "skipped" ? "skipped" : c.case_passed ? "pass" : "fail"; }

  // ---------------------------------------------------------------- filter and sort
  const FILTERS = [
    ["all", "All", () => true],
    ["failed", "Failed", (c) => verdictOf(c) === "fail"],
    ["passed", "Passed", (c) => verdictOf(c) === "pass"],
    ["flaky", "Flaky", (c) => c.label === "flaky"],
    ["broken", "Broken", (c) => c.label === "broken"],
    ["stable", "Stable", (c) => c.label === "stable"],
  ];
  const LABEL_ORDER = { broken: 0, flaky: 1, stable: 2, skipped: 3 };
  const VERDICT_ORDER = { fail: 0, pass: 1, skipped: 2 };
  const SORT = {
    verdict: (c) => VERDICT_ORDER[verdictOf(c)],
    id: (c) => c.id,
    suite: (c) => c.suite || "",
    label: (c) => LABEL_ORDER[c.label] ?? 9,
    pass_rate: (c) => c.pass_rate,
    runs: (c) => c.runs,
    consistency: (c) => c.consistency,
    avg_duration_ms: (c) => c.avg_duration_ms,
  };
  const collator = new Intl.Collator("en", { numeric: true, sensitivity: "base" });

  function haystack(i) {
    if (haystacks[i] === undefined) {
      const c = cases[i];
      const parts = [c.id, c.suite, c.source, c.label];
      for (const r of c.run_details || []) parts.push(show(r.output), r.error || "");
      haystacks[i] = parts.join("\n").toLowerCase();
    }
    return haystacks[i];
  }

  function compute() {
    const test = FILTERS.find((f) => f[0] === state.filter)[2];
    const q = state.query;
    const shown = [];
    for (let i = 0; i < cases.length; i++) {
      if (test(cases[i]) && (!q || haystack(i).includes(q))) shown.push(i);
    }
    if (state.key) {
      const get = SORT[state.key];
      shown.sort((a, b) => {
        const x = get(cases[a]), y = get(cases[b]);
        const d = typeof x === "string" ? collator.compare(x, y) : x - y;
        return d * state.dir || a - b;
      });
    }
    state.shown = shown;
  }

  // ---------------------------------------------------------------- table rows
  function caseRow(i) {
    const c = cases[i];
    const tr = el("tr", "case-row");
    tr.dataset.index = String(i);
    tr.tabIndex = 0;
    tr.setAttribute("aria-expanded", String(open.has(i)));
    const v = verdictOf(c);
    add(tr, add(el("td"), badge(v, v)));
    add(tr, add(el("td"), el("span", "caret", "▶"), el("span", "case-id", c.id), quarantineBadge(c)));
    add(tr, el("td", "suite", c.suite || "—"));
    const cls = (c.stability_class || "").replace("_", " ");
    add(tr, add(el("td"), badge(c.label, c.label), cls !== c.label && el("span", "sub", cls)));
    tr.appendChild(rateCell(c));
    const runs = add(el("td", "num"), el("span", null, nf.format(c.passed) + " / " + nf.format(c.runs - (c.skipped || 0))));
    const plural = (n, word) => nf.format(n) + " " + word + (n === 1 ? "" : "s");
    const bad = [[c.errors || 0, "error"], [c.timeouts || 0, "timeout"]].filter(([n]) => n).map(([n, w]) => plural(n, w));
    if (bad.length) add(runs, el("span", "sub errs", bad.join(", ")));
    // planned runs not all in (a partial report, a stopped or adaptive sweep): say how many were planned
    if (c.runs_planned && c.runs_planned > c.runs) add(runs, el("span", "sub", "of " + nf.format(c.runs_planned) + " planned"));
    tr.appendChild(runs);
    tr.appendChild(el("td", "num", pct(Math.round(c.consistency * 1000) / 10)));
    const dur = add(el("td", "num"), el("span", null, ms(c.avg_duration_ms)));
    add(dur, el("span", "sub", ms(c.min_duration_ms) + " – " + ms(c.max_duration_ms)));
    tr.appendChild(dur);
    return tr;
  }

  function rateCell(c) {
    const td = el("td");
    const meter = el("div", "meter" + (c.pass_rate >= 100 ? "" : c.pass_rate >= 50 ? " m-warn" : " m-bad"));
    const fill = el("span");
    fill.style.width = Math.max(0, Math.min(100, c.pass_rate)) + "%";
    meter.appendChild(fill);
    const ci = c.pass_rate_ci || [0, 0];
    const text = add(el("div"), el("span", null, pct(Math.round(c.pass_rate * 10) / 10)),
      el("span", "sub", "95% CI " + Math.round(ci[0]) + "–" + Math.round(ci[1])),
      c.adaptive && c.runs_saved > 0 && el("span", "sub biased", "biased: adaptive"));
    return add(td, add(el("div", "rate"), meter, text));
  }

  // ---------------------------------------------------------------- details
  function facts(pairs) {
    const dl = el("dl", "facts");
    for (const [k, v] of pairs) if (v !== null && v !== undefined && v !== "") add(dl, add(el("div"), el("dt", null, k), el("dd", null, v)));
    return dl;
  }

  function detailRow(i) {
    const c = cases[i];
    const tr = el("tr", "detail-row");
    const td = el("td");
    td.colSpan = 8;
    const box = el("div", "detail");
    const io = add(el("div", "io"), add(el("div"), el("h3", null, "Input"), pre(c.input)));
    if (c.expected !== null && c.expected !== undefined) add(io, add(el("div"), el("h3", null, "Expected"), pre(c.expected)));
    const counted = c.runs - (c.skipped || 0);
    add(box, io, facts([
      ["Source", c.source], ["Requirement", c.required_passes + " of " + (c.adaptive ? c.runs_planned : counted) + " passes needed, " + c.passed + " passed"],
      ["Stability", (c.stability_class || "").replace("_", " ")], ["Consistency", pct(Math.round(c.consistency * 1000) / 10)],
      ["Semantic consistency", semanticText(c)],
      ["Duration", "min " + ms(c.min_duration_ms) + " · avg " + ms(c.avg_duration_ms) + " ± " + ms(c.std_deviation_ms) + " · max " + ms(c.max_duration_ms)],
      ["Errors", c.errors ? String(c.errors) : null], ["Timeouts", c.timeouts ? String(c.timeouts) : null],
      ["Retries", c.retries ? String(c.retries) : null],
      ["Adaptive", adaptiveText(c)], ["Cost", usd(c.cost_usd)], ["Tokens", tokens(c.usage)],
      ["Judge cost", c.judge_usage ? usd(c.judge_cost_usd) : null], ["Judge tokens", c.judge_usage ? tokens(c.judge_usage) : null],
      ["Cost per passing run", usd(c.cost_per_passing_run)], ["Served", servedText(c.served)],
      ["Load", loadText(c.load_bias)],
    ]));
    if ((c.checkpoints || []).length) add(box, el("h3", null, "Checkpoints"), checkpointsTable(c.checkpoints));
    if ((c.criteria || []).length) add(box, el("h3", null, "Criteria"), criteriaBlock(c.criteria));
    if ((c.trajectories || []).length) add(box, el("h3", null, "Trajectories"), trajectoriesBlock(c));
    if ((c.semantic_clusters || []).length) add(box, el("h3", null, "Meanings"), clustersTable(c.semantic_clusters));
    const classes = Object.entries(c.failure_classes || {});
    if (classes.length) add(box, el("h3", null, "Failure classes"), classesTable(classes));
    const details = c.run_details || [];
    if (details.length > 1) add(box, variants(details));
    add(box, el("h3", null, "Runs"), runsTable(details));
    if (c.run_details_truncated) add(box, el("p", "note", c.run_details_truncated + " more runs were counted but not kept."));
    td.appendChild(box);
    return add(tr, td);
  }

  function miniTable(head, rows) {
    const table = el("table", "runs mini");
    const tr = el("tr");
    for (const [h, num] of head) tr.appendChild(el("th", num ? "num" : null, h));
    add(table, add(el("thead"), tr));
    const body = el("tbody");
    for (const cells of rows) {
      const row = el("tr");
      cells.forEach((cell, i) => row.appendChild(cell instanceof Node ? add(el("td"), cell) : el("td", head[i][1] ? "num" : null, cell)));
      body.appendChild(row);
    }
    return add(table, body);
  }

  // worded as farm.reports.load.load_text
  function loadText(b) {
    if (!b || b.high_from === null || b.high_from === undefined || !b.high_runs || !b.low_runs) return null;
    let text = b.high_from + "+ in flight: " + b.high_pass_rate + "% of " + b.high_runs +
      " runs; fewer: " + b.low_pass_rate + "% of " + b.low_runs;
    if (b.q !== null && b.q !== undefined) text += " (q=" + b.q + (b.flagged ? ", flagged" : "") + ")";
    return text;
  }
  // worded as farm.models.served.ServedCounts.text
  function servedText(s) {
    if (!s) return null;
    const list = (o, pre) => Object.entries(o || {}).map(([k, n]) => pre + k + " ×" + n).join(", ");
    const models = list(s.models, ""), prints = list(s.system_fingerprints, "");
    const commits = Object.entries(s.commits || {}).map(([k, n]) => "commit " + k.slice(0, 12) + " ×" + n).join(", ");
    const servers = list(s.server_versions, "neuro-san ");
    const text = models + (models && prints ? " (" + prints + ")" : prints);
    return [text, commits, servers].filter((p) => p).join("; ") || null;
  }
  function semanticText(c) {
    if (c.semantic_consistency === null || c.semantic_consistency === undefined) return null;
    const n = (c.semantic_clusters || []).length;
    return pct(Math.round(c.semantic_consistency * 1000) / 10) + " in the largest of " + n + " cluster" + (n === 1 ? "" : "s") +
      " of meaning" + (c.semantic_estimated ? " (estimated from a sample)" : "");
  }

  function clustersTable(clusters) {
    const head = [["Runs", true], ["Share", true], ["Example", false]];
    return miniTable(head, clusters.slice(0, 5).map((k) => [String(k.count), pct(Math.round(k.share * 1000) / 10), k.example]));
  }

  function checkpointsTable(points) {
    const head = [["Checkpoint", false], ["Required", false], ["Reached", true], ["Reach rate", false], ["Avg turn", true], ["First unmet", true]];
    return miniTable(head, points.map((p) => {
      const meter = el("div", "meter" + (p.reach_rate >= 100 ? "" : p.reach_rate >= 50 ? " m-warn" : " m-bad"));
      const fill = el("span");
      fill.style.width = Math.max(0, Math.min(100, p.reach_rate)) + "%";
      meter.appendChild(fill);
      const ci = p.reach_rate_ci || [0, 100];
      const rate = add(el("div", "rate cp-rate"), meter, add(el("div"), el("span", null, pct(p.reach_rate)),
        el("span", "sub", "95% CI " + ci[0] + "–" + ci[1])));
      return [p.id, p.required ? "yes" : "no", p.reached + " / " + p.runs, rate,
        p.avg_reached_at_turn === null || p.avg_reached_at_turn === undefined ? "–" : String(p.avg_reached_at_turn), String(p.first_unmet || 0)];
    }));
  }

  // The scorecard per check (SPEC 17), worded as farm.reports.criteria words it.
  function judgeMark(k) {  // as farm.reports.criteria.judge_mark (SPEC 23)
    if (!k.judge_noisy || k.judge_flip_rate == null) return "";
    return " (judge-noisy: flip rate " + Number((100 * k.judge_flip_rate).toPrecision(3)) + "%)";
  }
  function criteriaBlock(criteria) {
    const failing = criteria.filter((k) => k.passed < k.runs);
    const box = el("div", "criteria");
    if (failing.length) {
      add(box, el("p", "criteria-failing", failing.length + " of " + criteria.length + " criteria failing: " +
        failing.map((k) => k.criterion + " " + k.passed + "/" + k.runs + judgeMark(k)).join(", ")));
    }
    const head = [["Criterion", false], ["Check", false], ["Kind", false], ["Met", true], ["Pass rate", true], ["95% CI", true], ["Label", false]];
    return add(box, miniTable(head, criteria.map((k) => {
      const ci = k.pass_rate_ci || [0, 100];
      return [k.id, k.criterion, k.kind, k.passed + "/" + k.runs, pct(k.pass_rate), ci[0] + "–" + ci[1] + "%", k.label + judgeMark(k)];
    })));
  }

  // The paths of tool calls (SPEC 21), worded as farm.reports.trajectory words them.
  function pathText(path) { return path.length ? path.join(" → ") : "(no tool call)"; }

  function trajectoriesBlock(c) {
    const box = el("div", "trajectories");
    let said = "Trajectory consistency: " + c.trajectory_consistency;
    const d = c.divergence;
    if (d) said += " · Divergence: step " + d.step + " (" + d.count + (d.count === 1 ? " failing run leaves " : " failing runs leave ") + pathText(d.path) + ")";
    add(box, el("p", "note", said));
    const head = [["Path", false], ["Runs", true], ["Share", true], ["Passed", true]];
    return add(box, miniTable(head, c.trajectories.slice(0, 5).map((p) =>
      [pathText(p.path), String(p.count), pct(Math.round(p.share * 1000) / 10), String(p.passed)])));
  }

  function classesTable(classes) {
    return miniTable([["Failure class", false], ["Runs", true], ["Example", false]], classes.map(([name, entry]) => {
      const ex = entry.example || {};
      const where = "run " + ex.run + (ex.turn ? ", turn " + ex.turn : "");
      return [el("span", "fclass", name), nf.format(entry.count), add(el("div"), el("span", "sub", where), el("div", "check-msg", ex.message || ""))];
    }));
  }

  function conversation(turns) {
    const box = el("details", "conversation");
    add(box, el("summary", null, "Conversation (" + turns.length + (turns.length === 1 ? " turn)" : " turns)")));
    const list = el("ol", "turns");
    for (const t of turns) {
      const said = (who, value) => add(el("div"), el("span", "who", who), document.createTextNode(" "), el("span", null, show(value)));
      const li = add(el("li"), said("User", t.input), said("Agent", t.output));
      if ((t.checkpoints_reached || []).length) add(li, el("div", "sub", "✓ " + t.checkpoints_reached.join(", ")));
      list.appendChild(li);
    }
    return add(box, list);
  }

  function variants(details) {
    const counts = new Map();
    for (const r of details) {
      if (r.status === "skipped") continue;
      const key = typeof r.output === "string" ? r.output.trim().replace(/\s+/g, " ") : JSON.stringify(r.output);
      const seen = counts.get(key);
      counts.set(key, seen ? [seen[0] + 1, seen[1]] : [1, r.output]);
    }
    if (counts.size < 2) return null;
    const list = el("ul", "variants");
    const top = [...counts.values()].sort((a, b) => b[0] - a[0]).slice(0, 5);
    for (const [n, output] of top) add(list, add(el("li"), el("span", "share", n + " × "), pre(output)));
    const wrap = add(el("div"), el("h3", null, counts.size + " distinct outputs" + (counts.size > 5 ? " (top 5)" : "")), list);
    return wrap;
  }

  function runsTable(details) {
    if (!details.length) return el("p", "note", "No run details kept.");
    const table = el("table", "runs");
    const head = el("tr");
    for (const h of ["Run", "Status", "Duration", "Retries", "In flight", "Output and checks"]) head.appendChild(el("th", null, h));
    add(table, add(el("thead"), head));
    const body = el("tbody");
    for (const r of details) body.appendChild(runRow(r));
    return add(table, body);
  }

  function runRow(r) {
    const bad = r.status !== "passed" && r.status !== "skipped";
    const tr = el("tr", "run-row" + (bad ? " is-bad" : ""));
    const status = add(el("td"), badge(r.status, r.status));
    if (r.failure_class) add(status, el("div", "fclass", r.failure_class + (r.failed_turn ? " · turn " + r.failed_turn : "")));
    if ((r.trajectory || []).length) add(status, el("div", "sub run-path", "path " + pathText(r.trajectory.map((c) => c.name))));
    add(tr, el("td", "num", "#" + r.run), status);
    add(tr, el("td", "num", ms(r.duration_ms)), el("td", "num", String(r.retries || 0)),
      el("td", "num", r.in_flight === null || r.in_flight === undefined ? "—" : String(r.in_flight)));
    const out = add(el("td", "out"), r.output === null && r.error ? null : pre(r.output));
    if (r.error) add(out, errorBox(r));
    if ((r.turns || []).length) add(out, conversation(r.turns));
    if ((r.failed_checks || []).length) {
      const list = el("ul", "checks");
      for (const chk of r.failed_checks) list.appendChild(checkItem(chk));
      add(out, list);
    }
    if ((r.judged_checks || []).length) {  // judge checks that passed: their verdict and reason
      const list = el("ul", "checks judged");
      for (const chk of r.judged_checks) list.appendChild(checkItem(chk));
      add(out, list);
    }
    return add(tr, out);
  }

  function errorBox(r) {
    const kind = r.status === "timeout" ? "Timeout" : r.error_type || "Error";
    const box = add(el("div", "error-box"), el("b", null, kind), el("span", null, r.error));
    if (r.traceback) add(box, add(el("details", "trace"), el("summary", null, "Traceback"), el("pre", null, r.traceback)));
    return box;
  }

  function checkItem(chk) {
    const li = el("li", "check");
    add(li, el("div", "check-head", chk.name + (chk.turn > 1 ? " · turn " + chk.turn : "")));
    if (chk.message) add(li, el("div", "check-msg", chk.message));
    const cmp = add(el("div", "cmp"), add(el("div"), el("span", "k", "expected"), pre(chk.expected)),
      add(el("div"), el("span", "k", "actual"), pre(chk.actual)));
    add(li, cmp);
    if (chk.verdict) add(li, el("p", "note", "judge: " + chk.verdict + (chk.reason ? " — " + chk.reason : "")));
    if (chk.judge_votes) add(li, el("p", "note", "judge votes (--confirm-failures): " + chk.judge_votes.join(", ")));
    return li;
  }

  // ---------------------------------------------------------------- render
  function render() {
    const tbody = $("rows");
    const pages = paging ? served.pages : Math.max(1, Math.ceil(state.shown.length / state.size));
    state.page = Math.min(state.page, pages - 1);
    const start = state.page * state.size;
    const slice = paging ? state.shown : state.shown.slice(start, start + state.size);
    const frag = document.createDocumentFragment();
    for (const i of slice) {
      frag.appendChild(caseRow(i));
      if (open.has(i)) frag.appendChild(detailRow(i));
    }
    if (!slice.length) add(frag, add(el("tr"), Object.assign(el("td", "empty", total ? "No case matches." : "No cases."), { colSpan: 8 })));
    tbody.replaceChildren(frag);
    const n = paging ? served.matching : state.shown.length;
    const range = n ? nf.format(start + 1) + "–" + nf.format(start + slice.length) + " of " : "0 of ";
    const count = $("row-count");
    count.textContent = "Showing " + range + nf.format(n) + (n === total ? " cases" : " matching (" + nf.format(total) + " total)");
    count.dataset.matching = String(n);
    $("page-info").textContent = "Page " + (state.page + 1) + " of " + pages;
    $("prev").disabled = state.page === 0;
    $("next").disabled = state.page >= pages - 1;
    $("pager").hidden = n <= 50;
  }

  function refresh() {
    if (paging) fetchPage(); else { compute(); render(); }
  }

  // One page from the view; a reply to an older request than the last is dropped.
  function fetchPage() {
    const asked = ++served.asked;
    const q = new URLSearchParams({ page: String(state.page + 1), size: String(state.size), q: state.query, filter: state.filter });
    if (state.key) { q.set("sort", state.key); q.set("order", state.dir > 0 ? "asc" : "desc"); }
    $("rows").setAttribute("aria-busy", "true");
    window.farmPagedCases(paging.cases + "?" + q.toString())  // report_paged.js: only in farm view's pages
      .then((body) => {
        if (asked !== served.asked) return;
        cases = body.cases;
        open.clear();  // indices are the page's own
        haystacks.length = 0;
        state.shown = cases.map((_, i) => i);
        state.page = body.page - 1;
        served.matching = body.matching;
        served.pages = body.pages;
        render();
        $("rows").setAttribute("aria-busy", "false");
      })
      .catch((err) => {
        if (asked !== served.asked) return;
        $("rows").setAttribute("aria-busy", "false");
        $("row-count").textContent = "Cannot load the cases: " + err.message;
      });
  }
  function turn() { if (paging) fetchPage(); else render(); }

  function toggle(tr) {
    const i = Number(tr.dataset.index);
    if (open.has(i)) {
      open.delete(i);
      const next = tr.nextElementSibling;
      if (next && next.classList.contains("detail-row")) next.remove();
    } else {
      open.add(i);
      tr.after(detailRow(i));
    }
    tr.setAttribute("aria-expanded", String(open.has(i)));
  }

  function buildChips() {
    const box = $("chips");
    for (const [key, label, test] of FILTERS) {
      const n = paging ? paging.counts[key] : key === "all" ? cases.length : cases.filter(test).length;
      const chip = add(el("button", "chip", label), el("span", "n", nf.format(n)));
      chip.type = "button";
      chip.dataset.filter = key;
      chip.setAttribute("aria-pressed", String(key === state.filter));
      chip.disabled = n === 0 && key !== "all";
      box.appendChild(chip);
    }
    box.addEventListener("click", (e) => {
      const chip = e.target.closest("button.chip");
      if (!chip) return;
      state.filter = chip.dataset.filter;
      state.page = 0;
      for (const b of box.children) b.setAttribute("aria-pressed", String(b === chip));
      refresh();
    });
  }

  function wire() {
    let timer = 0;
    $("filter").addEventListener("input", (e) => {
      clearTimeout(timer);
      const value = e.target.value.trim().toLowerCase();
      timer = setTimeout(() => { state.query = value; state.page = 0; refresh(); }, 120);
    });
    for (const th of document.querySelectorAll("#results th[data-key]")) {
      th.setAttribute("aria-sort", "none");
      th.addEventListener("click", () => {
        state.dir = state.key === th.dataset.key ? -state.dir : 1;
        state.key = th.dataset.key;
        for (const other of document.querySelectorAll("#results th[data-key]")) other.setAttribute("aria-sort", "none");
        th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
        refresh();
      });
    }
    $("rows").addEventListener("click", (e) => {
      if (e.target.closest("tr.detail-row")) return;
      const tr = e.target.closest("tr.case-row");
      if (tr && !window.getSelection().toString()) toggle(tr);
    });
    $("rows").addEventListener("keydown", (e) => {
      const tr = e.target.closest && e.target.closest("tr.case-row");
      if (tr && e.target === tr && (e.key === "Enter" || e.key === " ")) { e.preventDefault(); toggle(tr); }
    });
    $("prev").addEventListener("click", () => { state.page--; turn(); });
    $("next").addEventListener("click", () => { state.page++; turn(); });
    $("page-size").addEventListener("change", (e) => { state.size = Number(e.target.value); state.page = 0; turn(); });
    $("export").addEventListener("click", exportJson);
  }

  function exportJson() {
    const sweep = String((report.metadata || {}).sweep_id || "report").replace(/[^A-Za-z0-9._-]+/g, "_");
    // paged: the whole report from the view (this page holds one page of its results)
    const url = paging ? paging.report : URL.createObjectURL(new Blob([raw], { type: "application/json" }));
    const a = el("a");
    a.href = url;
    a.download = "farm-report-" + sweep + ".json";
    document.body.appendChild(a);
    a.click();
    a.remove();
    if (!paging) setTimeout(() => URL.revokeObjectURL(url), 10000);
  }

  buildChips();
  wire();
  if (paging) { state.shown = cases.map((_, i) => i); render(); } else refresh();  // paged: the first page is here
  document.documentElement.dataset.ready = "true";
  if (window.performance && performance.mark) performance.mark("farm-ready");  // read by benchmarks
})();
