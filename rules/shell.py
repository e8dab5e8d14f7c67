"""Shell commands as rules see them: the words of each simple command, or why they cannot be known.

A text pattern cannot secure a shell: `rm -r -f`, `rm -fr`, `'rm' '-rf'`, `rm${IFS}-rf` and
`$(echo rm) -rf` all delete as `rm -rf` does. So a `run_command` call is read the way the shell
reads it (quotes removed, split into simple commands at `;`, `&&`, `||`, `|`, `&`, newlines and
parentheses), and whatever makes the shell run words that are not in the text is reported as
unresolved: the caller then asks a human (docs/escalation.md, "What rules can and cannot stop").

Unresolved: `$` expansions (variables, `$(...)`, `$((...))`, `$'...'`), backticks, here-documents,
process substitution `<(...)`, unterminated quotes, brace expansion (`{rm,-rf}`), a pattern
(`*?[`) in the command name, a `.` command, and any word naming a shell or a command that runs
a string or its input as a command (SHELLS, STRING_RUNNERS, `env -S`). One linear pass; a
command longer than MAX_COMMAND_CHARS is unresolved as a whole.
"""

from __future__ import annotations

import re

from engine.kernel.frozen import Frozen

SHELL_TOOL = "run_command"  # the builtin `streetrace.cli` tool (engine/runtime/tools/cli.py)
MAX_COMMAND_CHARS = 16 * 1024  # longer: a human decides (a 16 KiB command of hostile shape takes ~50 ms)

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "busybox"})
STRING_RUNNERS = frozenset(
    {"eval", "exec", "source", "trap", "alias", "xargs", "parallel", "su", "runuser", "ssh", "watch", "script", "flock"}
)

_SEPARATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "(", ")", "\n")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_BRACE_EXPANSION = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")
_COMBINED_FLAGS = re.compile(r"-[a-z]{2,}")
_QUOTED = "\x00"  # stands for a quoted character in a word's `bare` form


class ParsedCommand(Frozen):
    commands: tuple[tuple[str, ...], ...]  # each simple command's words, quotes removed
    unresolved: str = ""  # why the words are not what runs ("" when they are)


class _Word:
    __slots__ = ("text", "bare", "redirect")

    def __init__(self, text: str, bare: str, redirect: bool) -> None:
        self.text = text  # quotes removed
        self.bare = bare  # the same with every quoted character replaced by _QUOTED
        self.redirect = redirect  # the target of a redirection, not a command word


def parse_command(command: str) -> ParsedCommand:
    """The simple commands of `command`, or why they cannot be known. Never raises."""
    if len(command) > MAX_COMMAND_CHARS:
        return ParsedCommand((), f"the command is too long to check (over {MAX_COMMAND_CHARS // 1024} KiB)")
    lexed, why = _Lexer(command).run()
    commands = tuple(tuple(w.text for w in words) for words in lexed)
    for words in lexed:
        why = why or _unresolved_words(words)
    return ParsedCommand(commands, why)


def match_words(words: tuple[str, ...]) -> tuple[str, ...]:
    """A simple command's words as rules compare them: lower case (`rm -R` is `rm -r`, and
    `RM` on a case-blind file system is still rm)."""
    return tuple(w.lower() for w in words)


def pattern_words(source: str) -> tuple[str, ...] | None:
    """A plain rule pattern read as one simple command, or None if it is not one."""
    parsed = parse_command(source)
    if parsed.unresolved or len(parsed.commands) != 1:
        return None
    return tuple(w.lower() for w in parsed.commands[0]) or None


def words_match(pattern: tuple[str, ...], words: tuple[str, ...]) -> bool:
    """Whether a simple command (`match_words`) does what a pattern's words name.

    The pattern's first word is a command name: it matches a word that equals it or is a path
    ending in it (`/bin/rm`), at any position (after `sudo`, `xargs`, `find -exec`, `{`, ...).
    Every further pattern word must appear somewhere after that word, in any order, combined
    short flags compared letter by letter: `rm -rf` matches `rm -r -f /`, `rm -fr`, `rm -Rfv`,
    `sudo /bin/rm -f -r x`, not `rm -r x` nor `rm --recursive --force` (long option synonyms
    are the program's business; write a rule for each spelling, or one for the command name).
    """
    head, needed = pattern[0], _flag_letters(pattern[1:])
    seen: set[str] = set()  # the words after the current position
    for word in reversed(words):
        if (word == head or word.rsplit("/", 1)[-1] == head) and needed <= seen:
            return True
        seen |= _flag_letters((word,)) | {word}
    return False


def _flag_letters(words: tuple[str, ...]) -> set[str]:
    found: set[str] = set()
    for word in words:
        if _COMBINED_FLAGS.fullmatch(word):
            found.update("-" + letter for letter in word[1:])
        else:
            found.add(word)
    return found


def _unresolved_words(words: list[_Word]) -> str:
    command = next((w for w in words if not w.redirect and not _ASSIGNMENT.match(w.bare)), None)
    if command is not None and any(c in command.bare for c in "*?["):
        return f"the command name {command.text!r} is a pattern the shell expands"
    if command is not None and command.text == ".":
        return "the command runs a file's commands ('.')"
    for k, word in enumerate(words):
        name = word.text.rsplit("/", 1)[-1].lower()
        if name in SHELLS:
            return f"the command runs a shell ({name}), whose commands rules cannot see"
        if name in STRING_RUNNERS:
            return f"the command runs a string or its input as a command ({name})"
        if name == "env" and any(w.text.startswith(("-S", "--split-string")) for w in words[k + 1 :]):
            return "the command runs a string as a command (env -S)"
        if _BRACE_EXPANSION.search(word.bare):
            return f"the word {word.text!r} is a brace expansion"
    return ""


class _Lexer:
    """POSIX shell words and separators, in one pass (enough to find every simple command)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.commands: list[list[_Word]] = [[]]
        self.why = ""
        self.chars: list[str] | None = None  # the word being read (None: between words)
        self.bare: list[str] = []
        self.redirect = False  # the next word is a redirection's target

    def run(self) -> tuple[list[list[_Word]], str]:
        text, i, n = self.text, 0, len(self.text)
        while i < n:
            c = text[i]
            if c in " \t":
                self._end_word()
                i += 1
            elif c == "#" and self.chars is None:
                end = text.find("\n", i)
                i = n if end == -1 else end
            elif c == "\\":
                if text.startswith("\\\n", i):  # a line continuation joins the lines
                    i += 2
                else:
                    self._add(text[i + 1 : i + 2] or "\\", quoted=i + 1 < n)
                    i += 2
            elif c == "'":
                end = text.find("'", i + 1)
                if end == -1:
                    return self._finish("the command has an unterminated quote")
                self._add(text[i + 1 : end], quoted=True)
                i = end + 1
            elif c == '"':
                i = self._double_quoted(i + 1)
                if i < 0:
                    return self._finish("the command has an unterminated quote")
            elif c == "`":
                self._unresolved("the command has a command substitution (`...`)")
                self._add(c, quoted=False)
                i += 1
            elif c == "$":
                self._dollar(i)
                self._add(c, quoted=False)
                i += 1
            elif c in "<>":
                i = self._redirection(i)
            elif c == "&" and text.startswith("&>", i):
                i = self._redirection(i + 1)
            elif c in ";&|()\n":
                op = next(s for s in _SEPARATORS if text.startswith(s, i))
                self._end_command()
                i += len(op)
            else:
                self._add(c, quoted=False)
                i += 1
        return self._finish("")

    def _double_quoted(self, i: int) -> int:
        """Read a "..." body from `i`; returns the index after the closing quote, -1 if none."""
        text, n = self.text, len(self.text)
        self._add("", quoted=True)  # "" is a word too
        while i < n:
            c = text[i]
            if c == '"':
                return i + 1
            if c == "\\" and i + 1 < n and text[i + 1] in '$`"\\\n':
                if text[i + 1] != "\n":
                    self._add(text[i + 1], quoted=True)
                i += 2
                continue
            if c == "`":
                self._unresolved("the command has a command substitution (`...`)")
            elif c == "$":
                self._dollar(i)
            self._add(c, quoted=True)
            i += 1
        return -1

    def _dollar(self, i: int) -> None:
        after = self.text[i + 1 : i + 2]
        if after == "(":
            self._unresolved("the command has a command substitution ($(...))")
        elif after == "{" or after.isalnum() or after in ("_", "@", "*", "#", "?", "$", "!", "-"):
            self._unresolved("the command uses a variable ($...), whose value rules cannot see")
        elif after in ("'", '"'):
            self._unresolved("the command has a $'...' string, which the shell decodes")

    def _redirection(self, i: int) -> int:
        text = self.text
        if self.chars is not None and "".join(self.bare).isdigit():  # `2>`: a descriptor number
            self.chars, self.bare = None, []
        self._end_word()
        if text.startswith("<<<", i):
            i += 3
        elif text.startswith("<<", i):
            self._unresolved("the command has a here-document (<<), whose text rules cannot see")
            i += 2
        elif text[i + 1 : i + 2] == "(":
            self._unresolved("the command has a process substitution (<(...) or >(...))")
            return i + 1
        else:
            i += 1
            while i < len(text) and text[i] in "<>&|":
                i += 1
        self.redirect = True
        return i

    def _add(self, chars: str, *, quoted: bool) -> None:
        if self.chars is None:
            self.chars, self.bare = [], []
        self.chars.append(chars)
        self.bare.append(_QUOTED * len(chars) if quoted else chars)

    def _end_word(self) -> None:
        if self.chars is not None:
            self.commands[-1].append(_Word("".join(self.chars), "".join(self.bare), self.redirect))
            self.chars, self.bare, self.redirect = None, [], False

    def _end_command(self) -> None:
        self._end_word()
        self.redirect = False
        if self.commands[-1]:
            self.commands.append([])

    def _unresolved(self, why: str) -> None:
        self.why = self.why or why

    def _finish(self, why: str) -> tuple[list[list[_Word]], str]:
        self._end_command()
        self._unresolved(why)
        return [words for words in self.commands if words], self.why
