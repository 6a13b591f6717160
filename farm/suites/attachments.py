"""Yao content parts with attachments: ``image``/``audio``/``file`` parts sent as Yao sends them.

A part ``{"type": "image", "source": "file://fixtures/receipt.jpg"}`` is read when the suite
loads (relative to the suite file; ``file:///abs/path`` is absolute) and becomes what Yao's
``agent/eval`` sends the model, so a worker on another machine needs no copy of the file:

- ``image`` → ``{"type": "image_url", "image_url": {"url": "data:<mime>;base64,…", "detail": "auto"}}``
  (an image given by ``url`` keeps that URL);
- ``audio`` → ``{"type": "input_audio", "input_audio": {"data": "<base64>", "format": "wav"}}``
  (or given inline as ``data``/``format``);
- ``file`` → ``{"type": "file", "file": {"url": "data:<mime>;base64,…", "filename": "<name>"}}``
  (or given by ``url``).

A missing or unreadable file, or one over ``MAX_ATTACHMENT_BYTES``, is a load error.
"""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path
from typing import Any

from farm.checks.extract import json_type_name
from farm.checks.spec import Issue

__all__ = ["MAX_ATTACHMENT_BYTES", "convert_part"]

FILE_PROTOCOL = "file://"
MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024
"""Largest attachment read into a case: every run task carries it, through Redis when distributed."""
_MIME_OVERRIDES = {".webp": "image/webp", ".bmp": "image/bmp", ".md": "text/markdown", ".yao": "application/json",
                   ".ts": "text/typescript", ".yaml": "text/yaml", ".yml": "text/yaml"}


def convert_part(part: dict[str, Any], key: str, base_dir: str) -> tuple[dict[str, Any], list[Issue]]:
    """The part as it is sent: attachments converted, any other part unchanged."""
    kind = part.get("type")
    if kind == "image":
        return _image(part, key, base_dir)
    if kind in ("audio", "input_audio"):
        return _audio(part, key, base_dir)
    if kind == "file" and ("source" in part or "url" in part):
        return _file(part, key, base_dir)
    return part, []


def _image(part: dict[str, Any], key: str, base_dir: str) -> tuple[dict[str, Any], list[Issue]]:
    detail = part.get("detail", "auto")
    if isinstance(part.get("url"), str) and "source" not in part:
        return {"type": "image_url", "image_url": {"url": part["url"], "detail": detail}}, []
    data, mime, issues = _read_source(part, key, base_dir)
    if issues:
        return part, issues
    return {"type": "image_url", "image_url": {"url": _data_url(mime, data), "detail": detail}}, []


def _audio(part: dict[str, Any], key: str, base_dir: str) -> tuple[dict[str, Any], list[Issue]]:
    if "source" not in part:
        nested = part.get("input_audio")
        inline: dict[str, Any] = nested if isinstance(nested, dict) else part
        if isinstance(inline.get("data"), str):
            return {"type": "input_audio", "input_audio": {"data": inline["data"],
                                                           "format": inline.get("format", "")}}, []
    data, _mime, issues = _read_source(part, key, base_dir)
    if issues:
        return part, issues
    suffix = Path(_path_of(part["source"])).suffix.lower().lstrip(".")
    return {"type": "input_audio", "input_audio": {"data": base64.b64encode(data).decode(), "format": suffix}}, []


def _file(part: dict[str, Any], key: str, base_dir: str) -> tuple[dict[str, Any], list[Issue]]:
    name = part.get("name") if isinstance(part.get("name"), str) else None
    if "source" not in part:
        filename = part.get("filename") if isinstance(part.get("filename"), str) else name or ""
        return {"type": "file", "file": {"url": part["url"], "filename": filename}}, []
    data, mime, issues = _read_source(part, key, base_dir)
    if issues:
        return part, issues
    filename = name or Path(_path_of(part["source"])).name
    return {"type": "file", "file": {"url": _data_url(mime, data), "filename": filename}}, []


def _path_of(source: str) -> str:
    return source[len(FILE_PROTOCOL):] if source.startswith(FILE_PROTOCOL) else source


def _read_source(part: dict[str, Any], key: str, base_dir: str) -> tuple[bytes, str, list[Issue]]:
    source = part.get("source")
    at = f"{key}.source"
    if not isinstance(source, str) or not source.startswith(FILE_PROTOCOL):
        shown = repr(source) if isinstance(source, str) else json_type_name(source)
        return b"", "", [(at, f"expected file://<path> (relative to the suite file), got {shown}")]
    path = Path(_path_of(source))
    if not path.is_absolute():
        path = Path(base_dir or ".") / path
    try:
        size = path.stat().st_size
        if size > MAX_ATTACHMENT_BYTES:
            return b"", "", [(at, f"{path}: {size:,} bytes, more than the {MAX_ATTACHMENT_BYTES:,} an attachment "
                                  "may have")]
        data = path.read_bytes()
    except FileNotFoundError:
        return b"", "", [(at, f"file not found: {path}")]
    except OSError as exc:
        return b"", "", [(at, f"cannot read {path}: {exc.strerror or exc}")]
    return data, _mime(path), []


def _mime(path: Path) -> str:
    suffix = path.suffix.lower()
    return _MIME_OVERRIDES.get(suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"


def _data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"
