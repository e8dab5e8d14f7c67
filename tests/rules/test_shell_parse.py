"""rules.shell: reading a command the way the shell does, and the word semantics of rules."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings, strategies as st

from rules.shell import MAX_COMMAND_CHARS, parse_command, pattern_words, words_match


def test_simple_commands_and_quotes() -> None:
    parsed = parse_command("""cd 'my dir' && ls -la "a b" | grep x; echo a\\ b # note\nmake""")
    assert parsed.commands == (("cd", "my dir"), ("ls", "-la", "a b"), ("grep", "x"), ("echo", "a b"), ("make",))
    assert parsed.unresolved == ""


def test_redirections_and_descriptor_numbers() -> None:
    assert parse_command("make 2>&1 >log.txt <in").commands == (("make", "1", "log.txt", "in"),)
    assert parse_command("cat <<< 'text'").unresolved == ""


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("echo $HOME", "variable"),
        ('echo "${X}"', "variable"),
        ("echo $(id)", "command substitution"),
        ("echo `id`", "command substitution"),
        ("echo $'\\x72m'", "$'...'"),
        ("cat <<EOF", "here-document"),
        ("diff <(a) b", "process substitution"),
        ("echo 'open", "unterminated"),
        ("{a,b}", "brace expansion"),
        ("/bin/r? x", "pattern"),
        (". ./env.sh", "'.'"),
        ("/usr/bin/zsh -c x", "shell (zsh)"),
        ("eval x", "(eval)"),
        ("env -S 'a b'", "env -S"),
        ("x" * (MAX_COMMAND_CHARS + 1), "too long"),
    ],
)
def test_what_cannot_be_resolved_says_why(command: str, why: str) -> None:
    assert why in parse_command(command).unresolved


@pytest.mark.parametrize("command", ["echo '$HOME'", "grep 'a$' f", "echo cost: 5$", "find . -exec rm {} \\;", "ls *.py"])
def test_what_the_shell_leaves_alone_is_resolved(command: str) -> None:
    assert parse_command(command).unresolved == ""


@pytest.mark.parametrize(
    ("pattern", "command", "matches"),
    [
        ("rm -rf", "rm -r -f x", True),
        ("rm -rf", "rm -fR x", True),
        ("rm -rf", "/usr/bin/rm -rfv x", True),
        ("rm -rf", "sudo rm -f -r x", True),
        ("rm -rf", "rm -r x", False),
        ("rm -rf", "rm --recursive --force x", False),  # long synonyms: a rule per spelling
        ("rm -rf", "-r -f rm x", False),  # the flags must follow the command name
        ("git push", "git -C repo push origin", True),
        ("git push", "git pull", False),
        ("npm publish", "npm --registry r publish", True),
        ("rm", "grep -r rm-me x", False),
    ],
)
def test_word_semantics(pattern: str, command: str, matches: bool) -> None:
    words = pattern_words(pattern)
    assert words is not None
    [command_words] = parse_command(command).commands
    assert words_match(words, tuple(w.lower() for w in command_words)) is matches


def test_patterns_that_are_not_one_command_match_by_text_only() -> None:
    assert pattern_words("a; b") is None and pattern_words("$x") is None and pattern_words("") is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=12), min_size=1, max_size=6))
def test_quoted_words_come_back_exactly(words: list[str]) -> None:
    parsed = parse_command(" ".join(shlex.quote(w) for w in words))
    assert parsed.commands == (tuple(words),)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_never_raises(text: str) -> None:
    parsed = parse_command(text)
    assert isinstance(parsed.unresolved, str)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("unit", ["'", '"', "\\", "$(", "{a,", "; ", "<<", "rm -rf ", "`", "a" * 7])
def test_hostile_commands_are_read_in_linear_time(unit: str) -> None:
    parse_command(unit * (MAX_COMMAND_CHARS // len(unit)))
