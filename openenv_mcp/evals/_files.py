"""Where an eval's outputs go: the report (``FILE.json``), its runs as they finish
(``FILE.runs.jsonl``, what ``--resume`` reads), the Inspect AI log (``FILE.eval``) and
an agent harness's configs, recordings and output (``FILE.agents/``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from openenv_mcp.errors import ArgumentError, OpenEnvError
from openenv_mcp.evals._report import EvalReport

__all__ = ["EvalFiles"]


@dataclass(frozen=True)
class EvalFiles:
    """An eval's files, named after its report.

    Attributes:
        report: the report's path (``.json``).
    """

    report: Path

    @classmethod
    def named(cls, output: Path | None, env: str, split: str) -> EvalFiles:
        """``output``, or ``eval-ENV-SPLIT.json`` in the working directory."""
        return cls(output or Path(f"eval-{env.replace(':', '_').replace('/', '_')}-{split}.json"))

    def _beside(self, suffix: str) -> Path:
        return self.report.with_name(self.report.name.removesuffix(".json") + suffix)

    @property
    def runs(self) -> Path:
        """The finished runs, one JSON line each (``--resume`` reads them)."""
        return self._beside(".runs.jsonl")

    @property
    def inspect_log(self) -> Path:
        """The Inspect AI log."""
        return self._beside(".eval")

    @property
    def agents(self) -> Path:
        """Where an agent harness's configs, recordings and output go."""
        return self._beside(".agents")

    def check(self, resume: bool) -> None:
        """Refuse to start where the report cannot be written, or where an earlier eval's
        files are and ``resume`` was not asked for.

        Raises:
            ArgumentError: saying which, and what to do.
        """
        if not resume and (self.report.exists() or self.runs.exists()):
            found = self.report if self.report.exists() else self.runs
            raise ArgumentError(
                f"{found} exists: pass --resume to continue that eval, or choose another --output"
            )
        folder = self.report.parent if str(self.report.parent) else Path(".")
        if not folder.is_dir() or not os.access(folder, os.W_OK):
            raise ArgumentError(
                f"cannot write the report to {self.report}: {folder} is not a writable folder"
            )

    def write(self, report: EvalReport) -> str | None:
        """Write the report and the Inspect log beside it; what kept the log from being
        written (inspect-ai is not installed), or ``None``.

        Raises:
            OSError: the report could not be written.
        """
        report.write(self.report)
        from openenv_mcp.evals._inspect import write_inspect_log

        try:
            write_inspect_log(report, self.inspect_log)
        except OpenEnvError as exc:  # the report stands without it
            return str(exc)
        return None
