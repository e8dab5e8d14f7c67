"""History policies (`policy NAME:` used by `agent A: history NAME`): compact the messages a
`run agent A ... history $h` call starts from, before they go into the agent's session.

- `trigger`: when to compact, a comparison on `token_count` (about 4 characters per token) or
  `message_count`; without one, always.
- `preserve`: kept as they are: `last N messages`, `first` (the first message), `$var` (the
  variable's value, pinned as a message of its own).
- `strategy`: `truncate` drops the other messages; `summarize` (the default) replaces them with
  one summary written by a one-off agent named after the policy (its key in a --script file),
  on the policy's `use model`.
"""

from __future__ import annotations

import json
import operator
from typing import TYPE_CHECKING, Any

from engine.flow.spec import PolicySpec

if TYPE_CHECKING:
    from engine.runtime.run_state import RunState

_OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne}


def _text(message: Any) -> str:
    content = message.get("content", message.get("text", "")) if isinstance(message, dict) else message
    return content if isinstance(content, str) else json.dumps(content, default=str)


def _measure(name: str, messages: list[Any]) -> float | None:
    if name in ("token_count", "tokens"):
        return sum(len(_text(m)) for m in messages) / 4
    if name in ("message_count", "messages"):
        return len(messages)
    return None


def triggered(policy: PolicySpec, messages: list[Any]) -> bool:
    trigger = policy.properties.get("trigger")
    if not isinstance(trigger, dict):
        return True
    measured = _measure(str(trigger.get("left", "")), messages)
    compare = _OPS.get(str(trigger.get("op", "")))
    right = trigger.get("right")
    if measured is None or compare is None or not isinstance(right, (int, float)):
        return False  # a trigger we cannot read never compacts: the history stays whole
    return bool(compare(measured, right))


async def compact(run: "RunState", policy: PolicySpec, history: Any) -> list[Any]:
    """The history the agent starts from under `policy`."""
    messages = list(history) if isinstance(history, list) else [history]
    if not triggered(policy, messages):
        return messages
    keep_last, keep_first, pinned = 0, False, []
    for item in policy.properties.get("preserve") or []:
        if isinstance(item, dict) and "last_messages" in item:
            keep_last = max(keep_last, int(item["last_messages"]))
        elif item == "first":
            keep_first = True
        elif isinstance(item, str) and item.startswith("$") and run.context is not None:
            name = item[1:]
            if name in run.context.vars:
                pinned.append({"role": "user", "content": f"{name}: {_text(run.context.vars[name])}"})
    head = messages[:1] if keep_first and messages else []
    tail = messages[len(head):][-keep_last:] if keep_last else []
    dropped = messages[len(head): len(messages) - len(tail)]
    if not dropped:
        return messages
    middle: list[Any] = []
    if str(policy.properties.get("strategy", "summarize")) != "truncate":
        middle = [{"role": "user", "content": f"Summary of the earlier conversation: {await _summary(run, policy, dropped)}"}]
    return pinned + head + middle + tail


async def _summary(run: "RunState", policy: PolicySpec, dropped: list[Any]) -> str:
    key = run.register_llm_agent(policy.name, policy.properties.get("use model") or None)
    transcript = "\n".join(
        f"{m.get('role', 'user') if isinstance(m, dict) else 'user'}: {_text(m)}" for m in dropped
    )
    outcome = await run.call_agent(key, f"Summarize this conversation in a few sentences:\n{transcript}")
    return outcome.text
