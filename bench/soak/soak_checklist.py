"""The soak's list of named checks, each passed or failed, in the order they are printed.

Kept apart from the checks themselves (soak_checks.py, soak_metrics.py) so that
both can add to it without importing each other.
"""

from __future__ import annotations


class Checks:
    """Named checks with their outcome and detail; the soak fails when one failed."""

    def __init__(self):
        self.items: list[dict] = []

    def add(self, name: str, ok: bool, detail: str = ""):
        """Records check `name` as passed (`ok`) or failed, with what was measured in `detail`."""
        self.items.append({"name": name, "ok": bool(ok), "detail": detail})

    @property
    def failed(self) -> list[dict]:
        """The failed checks, in the order they were added."""
        return [c for c in self.items if not c["ok"]]
