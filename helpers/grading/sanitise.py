"""Executed notebooks keep no live markup: text, tracebacks and raster images only.

The instructor opens (or converts to HTML) the executed notebooks, so anything
a student's kernel displayed is treated as hostile. Rather than filtering HTML
(``<svg onload>``, ``<img onerror>``, ``<script>``, ``javascript:`` URLs, and
whatever the next browser quirk is), outputs keep only the MIME types that
cannot run code: ``text/plain`` and PNG/JPEG/GIF images. Markdown cells (the
student's own text) have their raw HTML escaped (``<`` becomes ``&lt;``),
script-capable link targets neutralised and attachments dropped. Output and
cell metadata are dropped too (they can carry widget state or trust flags).
"""

from __future__ import annotations

import re
from typing import Any

SAFE_MIME = ("text/plain", "image/png", "image/jpeg", "image/gif")
_SCRIPT_LINK = re.compile(r"\]\(\s*<?\s*(javascript|vbscript|data|file)\s*:", re.I)


def safe_markdown(source: str) -> str:
    """Markdown with raw HTML shown as text and no script-capable link targets."""
    source = source.replace("<", "&lt;")
    return _SCRIPT_LINK.sub("](#blocked-", source)


def safe_output(out: Any) -> Any | None:
    """The output with only safe MIME types, or None when nothing safe is left."""
    kind = out.get("output_type")
    if kind in ("display_data", "execute_result"):
        data = {k: v for k, v in (out.get("data") or {}).items() if k in SAFE_MIME}
        if not data:
            return None
        out["data"] = data
        out["metadata"] = {}
    elif kind not in ("stream", "error"):
        return None
    return out


def sanitise_notebook(nb: Any, clean: Any = None) -> None:
    """Sanitise every cell of ``nb`` in place (``clean``: an extra output filter)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = safe_markdown(cell.source)
            cell.pop("attachments", None)
        elif cell.cell_type == "code":
            outputs = clean(cell.get("outputs", [])) if clean else cell.get("outputs", [])
            cell.outputs = [o for o in map(safe_output, outputs) if o is not None]
