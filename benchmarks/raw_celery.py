"""Raw Celery on Redis, the baseline the farm's distributed mode is measured against.

Worker (the benchmark scripts start it)::

    BENCH_BROKER=redis://127.0.0.1:P/0 celery -A raw_celery worker -Q bench -P prefork -c 2

Submitter::

    python benchmarks/raw_celery.py --broker redis://127.0.0.1:P/0 --task noop --n 5000

publishes ``n`` tasks as one group (JSON, result backend on the same Redis, Celery's other
defaults), waits for every result, and prints ``{"n", "publish_s", "elapsed_s"}`` as JSON.
``noop`` returns a ~200-byte dict at once; ``sleep`` sleeps ``--ms`` first (an I/O-bound run);
``post`` makes the farm's HTTP agent call itself: ``POST --url`` with the farm's JSON body on a
keep-alive connection of its worker thread (``http.client``, opened once per thread), the answer
read and decoded (issue 32's reference for the distributed I/O-bound sweep).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from celery import Celery, group

BROKER = os.environ.get("BENCH_BROKER", "redis://127.0.0.1:6379/0")
QUEUE = "bench"

app = Celery("bench", broker=BROKER, backend=BROKER)
app.conf.update(
    task_serializer="json", result_serializer="json", accept_content=["json"],
    task_default_queue=QUEUE, broker_connection_retry_on_startup=True, result_expires=3600,
)

PAYLOAD = "x" * 120


@app.task(name="bench.noop")
def noop(i: int) -> dict[str, Any]:
    return {"i": i, "status": "passed", "duration_ms": 0.0, "output": PAYLOAD}


@app.task(name="bench.sleep")
def sleep(i: int, ms: float) -> dict[str, Any]:
    time.sleep(ms / 1000)
    return {"i": i, "status": "passed", "duration_ms": ms, "output": PAYLOAD}


_local = threading.local()


def _connection(url: str) -> http.client.HTTPConnection:
    conn: http.client.HTTPConnection | None = getattr(_local, "conn", None)
    if conn is None:
        parts = urlsplit(url)
        conn = _local.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=60)
    return conn


@app.task(name="bench.post")
def post(i: int, url: str) -> dict[str, Any]:
    body = json.dumps({"messages": [{"role": "user", "content": f"say pong number {i}"}]}).encode()
    start = time.perf_counter()
    conn = _connection(url)
    try:
        conn.request("POST", urlsplit(url).path or "/", body, {"Content-Type": "application/json"})
        answer = json.loads(conn.getresponse().read())
    except (OSError, http.client.HTTPException):
        conn.close()  # a dropped keep-alive connection: once more on a new one
        _local.conn = None
        conn = _connection(url)
        conn.request("POST", urlsplit(url).path or "/", body, {"Content-Type": "application/json"})
        answer = json.loads(conn.getresponse().read())
    return {"i": i, "status": "passed", "duration_ms": (time.perf_counter() - start) * 1000, "output": answer["text"]}


def _signature(task: str, i: int, ms: float, url: str) -> Any:
    if task == "post":
        return post.s(i, url)
    return noop.s(i) if task == "noop" else sleep.s(i, ms)


def submit(task: str, n: int, ms: float, timeout: float, url: str = "") -> dict[str, float]:
    sigs = [_signature(task, i, ms, url) for i in range(n)]
    start = time.perf_counter()
    result = group(sigs).apply_async()
    published = time.perf_counter()
    values = result.join_native(timeout=timeout, propagate=True)
    elapsed = time.perf_counter() - start
    if len(values) != n:
        raise RuntimeError(f"{len(values)} results for {n} tasks")
    return {"n": n, "publish_s": published - start, "elapsed_s": elapsed}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--broker", required=True)
    p.add_argument("--task", choices=["noop", "sleep", "post"], default="noop")
    p.add_argument("--url", default="", help="the agent server (--task post)")
    p.add_argument("--n", type=int, default=5000)
    p.add_argument("--ms", type=float, default=100.0)
    p.add_argument("--timeout", type=float, default=600.0)
    args = p.parse_args()
    app.conf.update(broker_url=args.broker, result_backend=args.broker)
    json.dump(submit(args.task, args.n, args.ms, args.timeout, args.url), sys.stdout)
    print()


if __name__ == "__main__":
    main()
