"""Layering rules: a workspace's taught-rules file over the shipped (or a given) rules, and what
the snapshot of those rules gives without reading YAML (rules/snapshot.py). Apart from the
loader so that `escalate hook`, while the files are unchanged, imports no PyYAML.
"""

from __future__ import annotations

from pathlib import Path

from engine.kernel.frozen import replace
from rules import snapshot
from rules.model import PolicyConfig, Rules, TaskOverride
from rules.workspace import workspace_rules_path


def remembered(explicit: Path | str | None, workspace: Path | None = None) -> Rules | None:
    """What rules.loader.load_layered(explicit, workspace=workspace) gives, from the project's
    snapshot (or the user's cached one) when it was made from these very files; None: load them."""
    top = workspace_rules_path(workspace)
    parts = snapshot.recall(snapshot.slot(Path(explicit) if explicit is not None else None, top))
    return None if parts is None else layered(parts, top, None)


def layered(parts: list[Rules], top: Path, text: str | None) -> Rules:
    """[the rules] or [the base, the workspace file `top`'s (its `text`; None: read it)]
    layered, the latter's notify run only if trusted."""
    if len(parts) == 1:
        return parts[0]
    return layer_rules(parts[0], _notify_if_trusted(parts[1], top, text))


def _notify_if_trusted(rules: Rules, path: Path, text: str | None) -> Rules:
    """A workspace file comes with the folder (a cloned repository): its rules only restrict or
    ask, but its `notify` command would run a program, so it runs only once the person has
    trusted the file's exact content (`escalate rules trust FILE`); until then it is named."""
    if rules.notify is None:
        return rules
    from engine.trusted import rules_trusted  # only for a notify command: hashlib (OpenSSL) costs a hook ~2 ms

    if text is None:
        from rules.yamlnodes import read_text

        text = read_text(str(path))
    if rules_trusted(path, text.encode("utf-8")):
        return rules
    import logging  # only to say so: a hook loads these rules at every tool call

    logging.getLogger("escalate.rules").warning(
        "%s: its notify command %s is not run: this file's content is not trusted "
        "(to trust it as it is now: escalate rules trust %s)", path, list(rules.notify.command), path)
    return replace(rules, notify=None)


def layer_rules(base: Rules, top: Rules) -> Rules:
    """`top` over `base`, merged rather than replaced: its rules are checked first, its task
    overrides add to the base's (their flags can only ask more), its defaults win per reason,
    and its policy replaces the base's when it has one."""
    tasks = dict(base.task_overrides)
    for task, override in top.task_overrides.items():
        under = base.override(task)
        if under is not None:
            name = next(n for n, o in base.task_overrides.items() if o is under)
            tasks.pop(name, None)
            switched = dict(under.switched_at) | dict(override.switched_at)  # the top file's line when both set it
            override = TaskOverride(override.always_ask or under.always_ask,
                                    override.require_confirmation or under.require_confirmation,
                                    override.rules + under.rules, task, tuple(switched.items()))
        tasks[task] = override
    return replace(
        base, global_rules=top.global_rules + base.global_rules, task_overrides=tasks,
        defaults={**base.defaults, **top.defaults}, budgets={**base.budgets, **top.budgets},
        notify=top.notify or base.notify,
        policy=top.policy if top.policy != PolicyConfig() else base.policy,
    )
