"""Messages as the contract bounds them: at most 2048 characters, always clipped. Pure."""

from __future__ import annotations

MAX_MESSAGE = 2048


def clip_message(text: str, limit: int = MAX_MESSAGE) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
