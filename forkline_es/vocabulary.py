"""The closed sets of words decisions.md fixes: outcomes, statuses, dispatch values."""

from __future__ import annotations

from typing import Final

__all__ = [
    "INVOKE_DISPATCH",
    "NONTERMINAL_STATUSES",
    "RESULT_DISPATCH",
    "SLOT_CLASS",
    "STEP_OUTCOMES",
    "STEP_STATUSES",
    "TERMINAL_OUTCOMES",
]

TERMINAL_OUTCOMES: Final = frozenset({"succeeded", "failed", "cancelled", "stopped"})
NONTERMINAL_STATUSES: Final = frozenset({"active", "suspended", "held"})
STEP_OUTCOMES: Final = frozenset({"succeeded", "failed", "skipped", "cancelled"})
STEP_STATUSES: Final = frozenset({"pending", "active", "ended"})
INVOKE_DISPATCH: Final = frozenset({"not-dispatched", "ambiguous"})
RESULT_DISPATCH: Final = frozenset({"succeeded", "failed", "ambiguous"})

#: Slot name -> payload class (decisions.md, Payload slots).
SLOT_CLASS: Final[dict[str, str]] = {
    "inputs": "inputs",
    "trigger": "inputs",
    "outputs": "outputs",
    "arguments": "arguments",
    "result": "results",
    "details": "results",
    "binding": "results",
    "event": "events",
}
