"""Suite loading: Yao JSONL and neuro-san HOCON into one validated ``Case`` model (SPEC 4.1).

``open_input`` is what ``-i`` calls: a ``CaseStream`` (``stream``) read once, case by case (``farm test``
plans it in batches); ``load_input`` holds every case. Every problem in the input is collected
and raised as one ``farm.errors.SuiteError``.
"""

from __future__ import annotations

from farm.suites.discover import (
    SUITE_SUFFIXES,
    LoadedInput,
    find_suite_files,
    load_files,
    load_input,
    load_message,
    looks_like_path,
    message_case,
    open_input,
    open_message,
)
from farm.suites.dynamic import LoadOptions
from farm.suites.jsonl import load_jsonl
from farm.suites.stream import CaseStream

__all__ = [
    "SUITE_SUFFIXES",
    "CaseStream",
    "LoadOptions",
    "LoadedInput",
    "find_suite_files",
    "load_files",
    "load_input",
    "load_jsonl",
    "load_message",
    "looks_like_path",
    "message_case",
    "open_input",
    "open_message",
]
