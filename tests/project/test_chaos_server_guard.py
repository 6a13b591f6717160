"""The example chaos server (``examples/servers/openai_server.py``), run as a user runs it: it says
it is for rehearsals only, and with ``--key`` its ``/stats`` (counts keyed by the prompts a sweep
sent) answers only to the key, as its chat route does."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from tests.support.servers import EXAMPLE_SERVERS, free_port, stop_process, wait_for_port

KEY = "sk-rehearsal"


def _get(url: str, key: str | None = None) -> tuple[int, dict[str, object]]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def _chat(url: str, key: str, text: str) -> int:
    body = json.dumps({"model": "echo", "messages": [{"role": "user", "content": text}]}).encode()
    request = urllib.request.Request(f"{url}/v1/chat/completions", data=body, method="POST",
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return int(answer.status)


@pytest.mark.parametrize("key", [KEY, None], ids=["with-key", "open"])
def test_stats_needs_the_key_and_the_server_says_it_is_for_rehearsals(key: str | None) -> None:
    port = free_port()
    argv = [sys.executable, str(EXAMPLE_SERVERS / "openai_server.py"), "--port", str(port)]
    process = subprocess.Popen([*argv, *(["--key", key] if key else [])], stdout=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, timeout=60, process=process)
        url = f"http://127.0.0.1:{port}"
        assert _chat(url, KEY, "my secret prompt") == 200
        if key:
            for wrong in (None, "sk-wrong"):
                status, answer = _get(f"{url}/stats", wrong)
                assert status == 401 and "my secret prompt" not in json.dumps(answer), answer
        status, answer = _get(f"{url}/stats", key)
        assert status == 200 and answer["hits"] == {"my secret prompt": 1}
    finally:
        stop_process(process)
    assert process.stdout is not None
    said = process.stdout.read()
    assert "for rehearsals only" in said and "never production traffic" in said, said


def test_the_docstring_says_rehearsals_only() -> None:
    text = (EXAMPLE_SERVERS / "openai_server.py").read_text()
    assert "For rehearsals only" in text and "never put it in\nfront of production traffic" in text
