"""Policies the collect tests name by reference (``--policy tests.policies:...``)."""

from __future__ import annotations

from typing import Any


async def say_bye_soon(observation: Any, info: dict[str, Any]) -> str:
    """An async policy: two messages, then "bye" (the echo env's end)."""
    return "bye" if info["step"] >= 2 else f"message {info['step']}"
