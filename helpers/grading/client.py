"""nbclient's client with output caps, and a record of timeouts and execute replies.

Output is capped per cell and per notebook while it arrives, so 300k printed
lines never reach the executed notebook (or the grader's memory).

Two nbclient methods are overridden: the public ``output`` and the private
``_async_handle_timeout``. The private one is why ``pyproject.toml`` pins
``nbclient<0.12``: check it still exists with this signature before raising
the pin.
"""

from __future__ import annotations

from typing import Any

import nbformat
from nbclient import NotebookClient


def _text_of(out: Any) -> str:
    if out.get("output_type") == "stream":
        text = out.get("text", "")
        return "".join(text) if isinstance(text, list) else str(text)
    return ""


def _size_of(out: Any) -> int:
    if out.get("output_type") == "stream":
        return len(_text_of(out))
    size = 0
    for key in ("data", "traceback", "evalue"):
        value = out.get(key)
        if isinstance(value, dict):
            size += sum(len(str(v)) for v in value.values())
        elif value:
            size += len(str(value))
    return size


class GradingClient(NotebookClient):
    """nbclient with output caps and a record of timeouts and execute replies."""

    def __init__(self, nb: Any, limits: Any, **kw: Any):
        super().__init__(nb, **kw)
        self.limits = limits
        self.nb_lines = 0
        self.nb_bytes = 0
        self.begin_cell()

    def begin_cell(self) -> None:
        self.cell_lines = 0
        self.cell_bytes = 0
        self.dropped_lines = 0
        self.dropped_bytes = 0
        self.timed_out = False
        self.reply: dict[str, Any] | None = None

    async def _async_handle_timeout(self, timeout: int, cell: Any = None) -> Any:
        # Private nbclient hook (pinned nbclient<0.12 depends on it): the only place a
        # cell timeout is visible when interrupt_on_timeout turns it into an error reply,
        # which would otherwise look like the student's own error.
        self.timed_out = True
        return await super()._async_handle_timeout(timeout, cell)

    def output(self, outs: list[Any], msg: dict[str, Any], display_id: Any, cell_index: int) -> Any:
        out = super().output(outs, msg, display_id, cell_index)
        if out is None or not outs or outs[-1] is not out:
            return out
        lim = self.limits
        room_lines = min(
            lim.cell_output_lines - self.cell_lines, lim.notebook_output_lines - self.nb_lines
        )
        room_bytes = min(
            lim.cell_output_bytes - self.cell_bytes, lim.notebook_output_bytes - self.nb_bytes
        )
        text = _text_of(out)
        lines = text.count("\n")
        size = _size_of(out)
        if lines <= room_lines and size <= room_bytes:
            self.cell_lines += lines
            self.nb_lines += lines
            self.cell_bytes += size
            self.nb_bytes += size
            return out
        if out.get("output_type") == "stream" and room_lines > 0 and room_bytes > 0:
            kept = "".join(text.splitlines(keepends=True)[:room_lines])[:room_bytes]
            out["text"] = kept
            self.dropped_lines += lines - kept.count("\n")
            self.dropped_bytes += size - len(kept)
            self.cell_lines += kept.count("\n")
            self.nb_lines += kept.count("\n")
            self.cell_bytes += len(kept)
            self.nb_bytes += len(kept)
            # everything after this is dropped for the cell
            self.cell_lines = max(self.cell_lines, lim.cell_output_lines)
            return out
        if display_id:  # nbclient tracks this output's position: keep a placeholder
            out["data"] = {"text/plain": "[grader] output not kept (over the size limit)"}
            out["metadata"] = {}
        else:
            outs.pop()
        self.dropped_lines += lines
        self.dropped_bytes += size
        return None

    def truncation_note(self) -> Any | None:
        if not (self.dropped_lines or self.dropped_bytes):
            return None
        return nbformat.v4.new_output(
            "stream",
            name="stderr",
            text=(
                f"[grader] output truncated: {self.dropped_lines} more lines "
                f"({self.dropped_bytes} characters) were not kept\n"
            ),
        )
