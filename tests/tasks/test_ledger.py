"""The server's running count of each task's episodes and successes."""

from __future__ import annotations

from openenv_mcp.tasks import TaskLedger


def test_only_judged_episodes_count() -> None:
    ledger = TaskLedger()
    ledger.note({"id": "a", "split": "test", "index": 0, "success": True})
    ledger.note({"id": "a", "success": False})
    ledger.note({"id": "b", "success": False})
    for ignored in (None, {}, {"id": "a"}, {"id": "a", "success": 1}, {"id": 3, "success": True}):
        ledger.note(ignored)  # type: ignore[arg-type]
    assert ledger.get("a") == (2, 1) and ledger.get("never") == (0, 0)
    assert ledger.to_json() == {
        "tasks": {"a": {"n": 2, "successes": 1}, "b": {"n": 1, "successes": 0}},
        "episodes": 3,
        "dropped": 0,
    }


def test_a_full_ledger_keeps_counting_what_it_holds_and_drops_new_ids() -> None:
    ledger = TaskLedger(limit=2)
    for task_id in ("a", "b", "c", "d", "a"):
        ledger.note({"id": task_id, "success": True})
    assert set(ledger.to_json()["tasks"]) == {"a", "b"}
    assert ledger.get("a") == (2, 2) and ledger.dropped == 2
