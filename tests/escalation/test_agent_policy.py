import threading

import pytest

from engine.escalation.agent_policy import (
    AgentEscalationHandler,
    AgentEscalationRequest as Req,
    AgentPolicy,
    Denial,
)
from engine.kernel.clock import FakeClock
from rules import default_rules, parse_rules


def handler(clock: FakeClock | None = None) -> AgentEscalationHandler:
    return AgentEscalationHandler(default_rules().policy, clock or FakeClock())


def test_seed_002_basic_escalation_with_suggestion_and_fallbacks() -> None:
    h = handler()
    r = h.handle(Req("codebase-locator", "need pattern analysis", "find similar implementations", "codebase-pattern-finder"))
    assert r.approved and r.target_agent == "codebase_pattern_finder"
    assert r.fallbacks == ("codebase_analyzer",)
    assert r.to_event_fields("codebase_locator") == {
        "source": "codebase_locator",
        "target": "codebase_pattern_finder",
        "approved": True,
        "reason": r.reason,
        "fallbacks": ["codebase_analyzer"],
    }


@pytest.mark.parametrize(
    ("reason", "task", "target"),
    [
        ("need to analyze code structure", "component relationships", "codebase_analyzer"),
        ("", "find similar implementations", "codebase_pattern_finder"),  # 'similar' comes before 'find'
        ("understand the flow", "x", "codebase_analyzer"),
        ("no keyword here", "at all", "codebase_locator"),  # orchestrator's first allowed
    ],
)
def test_auto_target_selection_from_hints_then_first_allowed(reason: str, task: str, target: str) -> None:
    assert handler().handle(Req("orchestrator", reason, task)).target_agent == target


def test_hint_that_the_source_may_not_reach_is_skipped() -> None:
    # pattern_finder may only reach analyzer: "find" would hint locator, which is not allowed
    r = handler().handle(Req("codebase_pattern_finder", "find it", "find usages"))
    assert r.approved and r.target_agent == "codebase_analyzer"


def test_disallowed_and_invalid_requests() -> None:
    h = handler()
    r = h.handle(Req("codebase_pattern_finder", "r", "t", "codebase_locator"))
    assert not r.approved and r.denial is Denial.NOT_ALLOWED and "allowed: codebase_analyzer" in r.reason
    assert r.fallbacks == ("codebase_analyzer",)  # the locator's fallbacks, minus nobody
    r = h.handle(Req("stranger", "r", "t"))
    assert not r.approved and r.denial is Denial.NOT_ALLOWED
    r = h.handle(Req("orchestrator", "r", "   "))
    assert r.denial is Denial.INVALID
    with pytest.raises(ValueError):
        h.handle(Req("", "r", "t"))


def test_direct_loop_within_window_denied_and_allowed_after() -> None:
    clock = FakeClock()
    h = handler(clock)
    assert h.handle(Req("codebase_locator", "r", "t", "codebase_analyzer")).approved
    clock.advance(60)
    r = h.handle(Req("codebase_analyzer", "r", "t", "codebase_locator"))
    assert not r.approved and r.denial is Denial.LOOP
    assert r.fallbacks == ()  # the locator's only fallback is the source itself
    clock.advance(241)  # 301 s after the first approval: outside the 300 s window
    assert h.handle(Req("codebase_analyzer", "r", "t", "codebase_locator")).approved


def test_chain_loop_a_b_c_a() -> None:
    clock = FakeClock()
    policy = AgentPolicy({"a": ["b"], "b": ["c"], "c": ["a", "d"]}, loop_window=100)
    h = AgentEscalationHandler(policy, clock)
    assert h.handle(Req("a", "r", "t")).approved
    clock.advance(10)
    assert h.handle(Req("b", "r", "t")).approved
    clock.advance(10)
    r = h.handle(Req("c", "r", "t", "a"))
    assert not r.approved and r.denial is Denial.LOOP
    assert h.handle(Req("c", "r", "t", "d")).approved
    clock.advance(95)  # a->b is now 115 s old: the chain is broken
    assert h.handle(Req("c", "r", "t", "a")).approved


def test_loop_through_the_request_chain_and_self() -> None:
    h = AgentEscalationHandler(AgentPolicy({"a": ["b", "a"], "b": ["a"]}), FakeClock())
    assert h.handle(Req("b", "r", "t", "a", chain=("a",))).denial is Denial.LOOP
    assert h.handle(Req("a", "r", "t", "a")).denial is Denial.LOOP


def test_depth_limit() -> None:
    h = AgentEscalationHandler(AgentPolicy({"c": ["d"]}, max_depth=3), FakeClock())
    assert h.handle(Req("c", "r", "t", chain=("a", "b"))).approved  # a->b->c->d: 3 hops
    r = h.handle(Req("c", "r", "t", chain=("x", "a", "b")))
    assert not r.approved and r.denial is Denial.DEPTH
    h.policy.set_max_depth(4)
    assert h.handle(Req("c", "r", "t", chain=("x", "y", "b"))).approved
    with pytest.raises(ValueError):
        h.policy.set_max_depth(0)


def test_custom_policy_from_rules_file() -> None:
    rules = parse_rules(
        "policy:\n  paths: {locator: [analyzer, pattern_finder]}\n  fallbacks: {analyzer: [locator, helper]}\n"
        "  maxDepth: 2\n  loopWindow: 10\n  targetHints: {pattern: pattern_finder}\n",
        "r.yaml",
    )
    h = AgentEscalationHandler(rules.policy, FakeClock())
    assert h.policy.is_source("locator") and not h.policy.is_source("analyzer")
    r = h.handle(Req("locator", "need a pattern", "t"))
    assert r.target_agent == "pattern_finder"
    r = h.handle(Req("locator", "x", "t"))
    assert r.target_agent == "analyzer" and r.fallbacks == ("helper",)


def test_history_recent_per_agent_success_rate_and_metrics() -> None:
    clock = FakeClock()
    h = handler(clock)
    h.handle(Req("codebase_locator", "r", "t", "codebase_analyzer"))  # t=0 approved
    clock.advance(100)
    h.handle(Req("codebase_locator", "r", "t", "nobody"))  # t=100 denied
    clock.advance(100)
    h.handle(Req("codebase_analyzer", "r", "t", "codebase_locator"))  # t=200 loop
    clock.advance(200)
    h.handle(Req("codebase_locator", "r", "t", "codebase_pattern_finder"))  # t=400 approved
    hist = h.history
    assert len(hist) == 4
    assert [e.timestamp for e in hist.recent(250, clock.now())] == [200, 400]
    assert [e.target for e in hist.for_agent("codebase-locator")] == ["codebase_analyzer", "nobody", "codebase_pattern_finder"]
    assert hist.success_rate("codebase_locator", None, clock.now()) == pytest.approx(2 / 3)
    assert hist.success_rate("codebase_locator", 350, clock.now()) == pytest.approx(1 / 2)
    assert hist.success_rate("codebase_locator", 10, clock.now()) == 1.0
    assert hist.success_rate("codebase_analyzer", None, clock.now()) == 0.0
    assert hist.success_rate("unknown", None, clock.now()) == 0.0
    assert hist.denials() == {Denial.NOT_ALLOWED: 1, Denial.LOOP: 1}
    assert hist.agents() == ["codebase_locator", "codebase_analyzer"]
    assert hist.common_paths(1)[0][1] == 1
    hist.clear()
    assert len(hist) == 0 and hist.recent(1000, clock.now()) == []


def test_thread_safe_under_concurrent_handling() -> None:
    policy = AgentPolicy({f"s{i}": [f"t{i}"] for i in range(8)}, loop_window=0)
    h = AgentEscalationHandler(policy, FakeClock())

    def work(i: int) -> None:
        for _ in range(500):
            h.handle(Req(f"s{i}", "r", "t"))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(h.history) == 4000
    assert all(h.history.success_rate(f"s{i}", None, 0) == 1.0 for i in range(8))
    assert sum(len(h.history.for_agent(f"s{i}")) for i in range(8)) == 4000


def test_available_agents_limit_the_choice() -> None:
    h = handler()
    workflow = ["codebase_locator", "codebase-pattern-finder"]
    # 'analyze' hints the analyzer, which this workflow lacks: the first allowed present one wins
    r = h.handle(Req("codebase_locator", "analyze it", "t"), available=workflow)
    assert r.approved and r.target_agent == "codebase_pattern_finder"
    r = h.handle(Req("codebase_locator", "r", "t", "codebase_analyzer"), available=workflow)
    assert not r.approved and r.denial is Denial.NO_TARGET
    r = h.handle(Req("codebase_pattern_finder", "r", "t"), available=workflow)
    assert not r.approved and r.denial is Denial.NO_TARGET and "is here" in r.reason
