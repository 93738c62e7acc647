"""OpenEnv's ``coding_env`` models (``CodingEnv``, its typed client), as ``--openenv`` speaks them.

``CodeAction(code=...)`` runs the code in the episode's sandbox; the task, its hidden
tests and the reward are this env's (OpenEnv's coding env has no tasks).
"""

from __future__ import annotations

from typing import Any

from openenv_mcp.openenv import (
    OpenEnvAction,
    OpenEnvModels,
    OpenEnvObservation,
    OpenEnvState,
    View,
)


class CodeAction(OpenEnvAction):
    code: str


class CodeObservation(OpenEnvObservation):
    stdout: str = ""
    stderr: str = ""
    exit_code: int = 0


class CodeState(OpenEnvState):
    last_exit_code: int = 0


class CodingModels(OpenEnvModels):
    Action = CodeAction
    Observation = CodeObservation
    State = CodeState
    package = "coding_env"

    def action(self, action: Any) -> Any:
        return {"code": action.code}

    def observation(self, view: View) -> dict[str, Any]:
        seen = view.get("observation") or {}
        return {
            "stdout": str(seen.get("stdout", "")),
            "stderr": str(seen.get("stderr", "")),
            "exit_code": int(seen.get("exit_code", 0)),
        }

    def state(self, view: View) -> dict[str, Any]:
        return {"last_exit_code": int((view.get("observation") or {}).get("exit_code", 0))}
