"""An agent's hook reads its command line without argparse (engine/cli/hook_cmd.py
`hook_arguments`): for every command line it accepts, the same values argparse gives
(engine/cli/parser.py, which every other command line goes to, with its own messages and exit code)."""

from __future__ import annotations

import pytest

from engine.cli.hook_cmd import hook_arguments
from engine.cli.main import main
from engine.cli.parser import parser_for

WELL_FORMED = [
    ["hook", "claude"],
    ["hook", "codex"],
    ["hook", "claude", "--db", "sqlite:///a b.db"],
    ["hook", "claude", "--db=postgresql://u@h/d"],
    ["hook", "codex", "--db="],
    ["hook", "codex", "--db", ""],
    ["hook", "claude", "--rules", "/p/rules.yaml", "--task", "shop", "--db", "x.db"],
    ["hook", "claude", "--task=shop", "--rules=r.yaml"],
    ["hook", "codex", "--task=a=b"],
    ["hook", "claude", "--task", "a=b"],
    ["hook", "claude", "--db", "a", "--db", "b"],  # the last one wins
    ["hook", "claude", "--db=a", "--db", "b", "--db=c"],
    ["hook", "claude", "--task", "ünï cödé"],
    ["hook", "claude", "--task", "bad\udcff"],  # an argv byte that is no UTF-8 (surrogateescape)
    ["hook", "claude", "--db=-x"],  # a value after `=` may start with `-`
    ["hook", "claude", "--task=--db"],
    ["hook", "claude", "--rules", "claude"],
]

# argparse's to judge: an error (usage, exit 2), help, or a spelling the hook's reader leaves to it
DECLINED = [
    ["hook"],
    ["hook", "claud"],
    ["hook", "install", "claude"],
    ["hook", "claude", "-h"],
    ["hook", "claude", "--help"],
    ["hook", "claude", "--db"],
    ["hook", "claude", "--db", "--rules", "r.yaml"],
    ["hook", "claude", "--db", "-x"],
    ["hook", "claude", "--db", "-1"],  # argparse takes it (a negative number)
    ["hook", "claude", "--d", "x"],  # argparse takes it (an abbreviation)
    ["hook", "claude", "--DB", "x"],
    ["hook", "claude", "--bogus"],
    ["hook", "claude", "--bogus=1"],
    ["hook", "claude", "extra"],
    ["hook", "claude", "--"],
    ["hook", "claude", "--db x"],
    ["hook", "claude", "-d", "x"],
    ["hook", "claude", "--=x"],
    ["hook", "claude", "--db", "x", "--rules"],
    ["run", "claude"],
]


@pytest.mark.parametrize("argv", WELL_FORMED, ids=repr)
def test_a_well_formed_hook_command_line_reads_as_argparse_reads_it(argv: list[str]) -> None:
    read = hook_arguments(argv)
    assert read is not None
    assert vars(read) == vars(parser_for(argv).parse_args(argv))


@pytest.mark.parametrize("argv", DECLINED, ids=repr)
def test_anything_else_is_left_to_argparse(argv: list[str]) -> None:
    assert hook_arguments(argv) is None


@pytest.mark.parametrize("argv, message", [
    (["hook", "claude", "--db"], "escalate hook claude: error: argument --db: expected one argument"),
    (["hook", "claude", "--bogus"], "escalate: error: unrecognized arguments: --bogus"),
    (["hook", "codex", "extra"], "escalate: error: unrecognized arguments: extra"),
    (["hook", "claude", "--db", "-x"], "escalate hook claude: error: argument --db: expected one argument"),
], ids=repr)
def test_a_malformed_hook_command_line_is_argparse_s_usage_error(argv: list[str], message: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(argv)
    assert exit.value.code == 2
    assert capsys.readouterr().err == message + "\n"


def test_help_of_the_hook_is_argparse_s(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["hook", "claude", "-h"])
    assert exit.value.code == 0
    assert capsys.readouterr().out.startswith("usage: escalate hook claude [-h] [--db URL] [--rules R.yaml] [--task NAME]")
