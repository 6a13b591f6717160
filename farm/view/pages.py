"""``farm view``'s own pages (the sweeps list, a sweep's figures, the sweeps in flight), rendered
by Jinja2 with autoescape on: case ids, agents, tags and failure reasons are always text.

The full report, the comparison and the trend pages are the farm's own self-contained renderers
(``farm.reports``); these pages only link to them.
"""

from __future__ import annotations

from typing import Any

from jinja2 import BaseLoader, Environment

__all__ = ["render"]

_LAYOUT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }} · farm view</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{{ csp }}">
{% if refresh %}<meta http-equiv="refresh" content="{{ refresh }}">{% endif %}
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2430}
nav{background:#1d2430;padding:8px 16px}nav a{color:#fff;margin-right:16px;text-decoration:none}
main{padding:16px}table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid #dde;padding:4px 8px;text-align:left;vertical-align:top}
td.n{text-align:right}.bad{color:#b3261e}.good{color:#1b7f3b}.muted{color:#667}
form.filters input,form.filters select{margin-right:8px}progress{width:200px}
</style></head>
<body data-page="{{ page }}"><nav><a href="/">Sweeps</a>{% if live %}<a href="/live">In flight</a>{% endif %}
{% if flower %}<a href="{{ flower }}" rel="noopener">Flower</a>{% endif %}</nav>
<main><h1>{{ title }}</h1>{% if error %}<p class="bad" id="error">{{ error }}</p>{% endif %}{{ body }}</main>
</body></html>"""

_INDEX = """<form class="filters" method="get" action="/">
<input name="tag" placeholder="tag KEY=VALUE" value="{{ f.tag }}">
<input name="agent" placeholder="agent" value="{{ f.agent }}">
<select name="status"><option value="">any status</option>{% for s in statuses %}
<option value="{{ s }}"{% if s == f.status %} selected{% endif %}>{{ s }}</option>{% endfor %}</select>
<input type="date" name="since" value="{{ f.since }}"><input type="date" name="until" value="{{ f.until }}">
<button type="submit">Filter</button></form>
<form method="get" action="/compare" id="compare">
<p><button type="submit">Compare the two chosen</button> <span class="muted">base (older) and head (newer)</span></p>
<table id="sweeps"><thead><tr><th>base</th><th>head</th><th>sweep</th><th>started</th><th>status</th><th>agent</th>
<th>cases</th><th>passed</th><th>failed</th><th>flaky</th><th>pass rate</th><th>tags</th></tr></thead><tbody>
{% for s in sweeps %}<tr>
<td><input type="radio" name="base" value="{{ s.sweep_id }}"{% if s.sweep_id == base_id %} checked{% endif %}></td>
<td><input type="radio" name="head" value="{{ s.sweep_id }}"{% if loop.first %} checked{% endif %}></td>
<td><a class="sweep" href="/sweeps/{{ s.sweep_id | urlencode }}">{{ s.sweep_id }}</a></td>
<td>{{ s.started_at }}</td><td>{{ s.status }}</td><td>{{ s.agent or "" }}</td><td class="n">{{ s.total_cases }}</td>
<td class="n">{{ s.passed_cases }}</td><td class="n">{{ s.failed_cases }}</td><td class="n">{{ s.flaky_cases }}</td>
<td class="n">{{ "%.1f" | format(s.overall_pass_rate) }}%</td>
<td>{% for k, v in s.tags.items() %}{{ k }}={{ v }} {% endfor %}</td></tr>
{% else %}<tr><td colspan="12" class="muted">No recorded sweep{% if filtered %} matches{% endif %}.</td></tr>
{% endfor %}
</tbody></table></form>"""

_SWEEP = """<p>{{ s.status }} · {{ s.started_at }} · agent {{ s.agent or "-" }} ·
{{ s.passed_cases }}/{{ s.total_cases }} cases passed · {{ "%.1f" | format(s.overall_pass_rate) }}% of runs</p>
{% if has_report %}<p><a id="full-report" href="/sweeps/{{ s.sweep_id | urlencode }}">The full report</a> ·
each case links to its trend across the recorded sweeps.</p>{% else %}
<p class="muted">The run journal of this sweep is not on disk here{% if s.journal %} ({{ s.journal }}){% endif %}:
these are the figures the history holds.</p>{% endif %}
<table id="cases"><thead><tr><th>case</th><th>runs</th><th>passed</th><th>pass rate</th><th>95% CI</th><th>label</th>
</tr></thead><tbody>{% for c in cases %}<tr>
<td><a class="case" href="/case?id={{ c.id | urlencode }}">{{ c.id }}</a></td><td class="n">{{ c.runs }}</td>
<td class="n">{{ c.passed }}</td><td class="n">{{ "%.1f" | format(c.pass_rate) }}%</td>
<td class="n">{{ "%.1f" | format(c.ci_low) }}–{{ "%.1f" | format(c.ci_high) }}%</td>
<td class="{{ 'bad' if c.label in ('flaky', 'broken') else '' }}">{{ c.label }}</td></tr>{% endfor %}
</tbody></table>"""

_LIVE = """{% if not broker %}<p class="muted">No broker: start farm view with --broker or FARM_BROKER_URL to
follow distributed sweeps.</p>{% else %}<table id="live"><thead><tr><th>sweep</th><th>agent</th><th>queue</th>
<th>submitted</th><th>runs</th><th>cases</th><th>state</th></tr></thead><tbody>
{% for s in sweeps %}<tr class="in-flight"><td>{{ s.sweep_id }}</td><td>{{ s.agent_id }}</td><td>{{ s.queue }}</td>
<td>{{ s.submitted }}</td>
<td><progress value="{{ s.runs_done }}" max="{{ s.total_runs or 1 }}"></progress>
<span class="runs">{{ s.runs_done }} / {{ s.total_runs }} runs</span></td>
<td class="n">{{ s.cases_done }} / {{ s.total_cases }}</td><td>{{ s.stopped or "running" }}</td></tr>
{% else %}<tr><td colspan="7" class="muted">No sweep in flight.</td></tr>{% endfor %}</tbody></table>
<p class="muted">Refreshes every {{ refresh }} seconds.</p>{% endif %}"""

_TEMPLATES = {"layout": _LAYOUT, "index": _INDEX, "sweep": _SWEEP, "live": _LIVE}
_ENV = Environment(loader=BaseLoader(), autoescape=True)


def render(page: str, *, title: str, layout: dict[str, Any], csp: str, error: str | None = None,
           **data: Any) -> str:
    """One page: its body template filled with ``data``, inside the layout (navigation, errors), under
    the Content-Security-Policy ``csp`` (the one its HTTP answer also carries)."""
    body = _ENV.from_string(_TEMPLATES[page]).render(**data, **layout) if page in _TEMPLATES else ""
    from markupsafe import Markup

    return _ENV.from_string(_LAYOUT).render(title=title, page=page, body=Markup(body), error=error, csp=csp,
                                            refresh=data.get("refresh"), **layout)
