"""Custom reporter agents (``-r ID``): an agent that turns the report into a document.

The agent gets one user message whose content is the JSON ``{"report", "format", "options"}``
of the Yao design, and the same in ``context.sly_data``; its text (or its structure as JSON)
is the document written to ``-o``.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from farm.agents.base import AgentContext, AgentRequest, Conversation
from farm.agents.options import AgentOptions
from farm.agents.resolve import create_agent, parse_reference
from farm.errors import AgentError, ReporterError
from farm.models import SweepReport
from farm.reports.details import with_all_details

_FORMATS = {".html": "html", ".htm": "html", ".md": "markdown", ".markdown": "markdown", ".json": "json"}


def reporter_format(suffix: str) -> str:
    """The ``format`` a reporter agent is asked for, from the output file's extension."""
    return _FORMATS.get(suffix.lower(), "text")


async def _ask(reporter_id: str, payload: dict[str, Any], options: AgentOptions, timeout_s: float) -> str:
    agent = create_agent(parse_reference(reporter_id, options), options)
    content = json.dumps(payload, ensure_ascii=False)
    request = AgentRequest(
        messages=[{"role": "user", "content": content}],
        new_messages=[{"role": "user", "content": content}],
        sly_data=payload,
        timeout_s=timeout_s,
        context=AgentContext(case_id="report", sly_data=payload),
        conversation=Conversation(chat_id=uuid.uuid4().hex),
    )
    try:
        reply = await asyncio.wait_for(agent.respond(request), timeout=timeout_s)
    finally:
        await agent.aclose()
    if reply.text is not None:
        return reply.text
    if reply.structure is not None:
        return json.dumps(reply.structure, indent=2, ensure_ascii=False)
    raise ReporterError(f"reporter {reporter_id!r} returned nothing")


def render_with_agent(
    report: SweepReport, reporter_id: str, fmt: str, options: AgentOptions, *, verbose: bool = False,
    timeout_s: float = 300.0,
) -> str:
    """Ask the reporter agent for the document; agent failures become ReporterError (exit 3)."""
    payload = {
        "report": with_all_details(report).model_dump(mode="json"),  # one message: details all in
        "format": fmt,
        "options": {"verbose": verbose, "include_outputs": True},
    }
    try:
        return asyncio.run(_ask(reporter_id, payload, options, timeout_s))
    except ReporterError:
        raise
    except (AgentError, TimeoutError, Exception) as exc:
        raise ReporterError(f"reporter {reporter_id!r} failed: {exc}") from exc
