"""What a shell command evidently does outside the workspace, which no restore takes back (pure).

A restore puts files back; it cannot uninstall a package, stop a container, roll back a database
or unsend a request. :func:`side_effects` names those effects of one shell command so the
timeline marks its row and the restore dialog says "not undone by this restore".

The command is cut with the lossless lexer (:mod:`retrace.agent.command_parts`): every command of
a ``&&``/``;``/``|`` chain, of a ``$(…)`` substitution and of a ``sh -c '…'`` string is looked at;
environment prefixes (``A=1``), ``sudo`` (and its options), ``env``, ``nohup``, ``time``,
``command``, ``exec`` are skipped to the program. Redirections (``> /etc/x``, ``>> ~/.bashrc``)
and copying commands (``cp``, ``mv``, ``tee``, ``install``, ``ln``, ``rm``, ``mkdir``,
``touch``, ``dd of=``) to a path outside the workspace count as writes outside it. Evident, not
exhaustive: a script that does something behind its name is not seen.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from retrace.agent.command_parts import CommandPart, split_command

MAX_DEPTH = 4
MAX_COMMAND = 20_000
"""Longer commands are classified on their first characters only."""

INSTALL = "installs packages outside the workspace"
CONTAINER = "containers"
DATABASE = "database"
NETWORK = "network write"
PUSH = "git push"
REMOTE = "remote copy"
OUTSIDE = "writes outside the workspace"
SERVICE = "system services"

SHELL_TOOLS = frozenset({"run_command", "bash", "shell", "run_shell_command", "run_in_terminal", "exec"})
"""Tool names (case-insensitive) whose input is a shell command."""


@dataclass(frozen=True)
class SideEffect:
    kind: str
    """One of the constants above ("network write")."""
    command: str
    """The piece of the command that does it ("curl -X POST https://…")."""


_WRAPPERS = frozenset(
    {"sudo", "doas", "env", "nohup", "time", "command", "exec", "nice", "stdbuf", "timeout"}
)
_WRAPPER_OPTS_WITH_VALUE = frozenset({"-u", "-g", "-C", "-h", "-p", "-U", "-n", "-s"})
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_REMOTE_ARG = re.compile(r"^(?:[^/\s:@]+@)?[A-Za-z0-9][A-Za-z0-9.-]*:(?!//)")
_SAFE_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero"})
_WRITE_METHODS = frozenset({"POST", "PUT", "DELETE", "PATCH"})

_PIP = frozenset({"pip", "pip3", "pipx", "conda", "mamba", "gem", "brew", "apt", "apt-get", "yum", "dnf"})
_INSTALL_VERBS = frozenset(
    {"install", "uninstall", "remove", "purge", "upgrade", "add", "reinstall", "update"}
)
_SYSTEM_MANAGERS = frozenset({"apk", "pacman", "zypper", "port", "snap", "flatpak", "choco", "winget"})
_NODE = frozenset({"npm", "pnpm", "yarn", "bun"})
_CONTAINERS = frozenset(
    {"docker", "podman", "nerdctl", "kubectl", "helm", "docker-compose", "minikube", "kind"}
)
_CONTAINER_READS = frozenset(
    {
        "ps",
        "images",
        "inspect",
        "logs",
        "version",
        "info",
        "get",
        "describe",
        "top",
        "stats",
        "events",
        "--version",
    }
)
_DATABASES = frozenset(
    {"psql", "mysql", "mariadb", "redis-cli", "mongo", "mongosh", "sqlcmd", "cqlsh", "clickhouse-client"}
)
_COPIERS = frozenset(
    {"cp", "mv", "tee", "install", "ln", "rm", "mkdir", "touch", "rsync", "chmod", "chown", "truncate"}
)
_ONLY_ASKING = frozenset({"--version", "-V", "--help", "-h", "version", "help"})
_SERVICES = frozenset({"systemctl", "service", "launchctl"})


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=False, posix=True)
    except ValueError:
        return text.split()


def _program(words: Sequence[str]) -> tuple[str, list[str]]:
    """(program basename, its arguments) after env prefixes and wrappers such as ``sudo``."""
    i = 0
    while i < len(words):
        w = words[i]
        if _ENV_ASSIGN.match(w):
            i += 1
            continue
        name = posixpath.basename(w)
        if name in _WRAPPERS:
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 2 if words[i] in _WRAPPER_OPTS_WITH_VALUE and name in ("sudo", "doas") else 1
            if name == "timeout" and i < len(words):
                i += 1  # the duration
            continue
        return name, list(words[i + 1 :])
    return "", []


def _first_arg(args: Sequence[str]) -> str:
    return next((a for a in args if not a.startswith("-")), "")


def _python_pip(name: str, args: list[str]) -> list[str] | None:
    """``python -m pip …`` / ``uv pip …`` → the pip arguments."""
    if re.fullmatch(r"python[0-9.]*", name) and args[:2] == ["-m", "pip"]:
        return args[2:]
    if name == "uv" and args[:1] == ["pip"]:
        return args[1:]
    return None


def _installs(name: str, args: list[str]) -> bool:
    pip_args = _python_pip(name, args)
    if pip_args is not None:
        return _first_arg(pip_args) in _INSTALL_VERBS
    if name in _PIP or name in _SYSTEM_MANAGERS or re.fullmatch(r"pip[0-9.]+", name):
        return _first_arg(args) in _INSTALL_VERBS or any(a in ("-S", "-R", "-U") for a in args[:1])
    if name in _NODE:
        global_flag = any(a in ("-g", "--global", "--location=global") for a in args)
        return (
            global_flag and _first_arg(args) in {"install", "i", "add", "uninstall", "remove", "link"}
        ) or (name == "yarn" and args[:1] == ["global"])
    if name in ("cargo", "go", "dotnet"):
        return _first_arg(args) == "install" or args[:2] == ["tool", "install"]
    return False


def _containers(name: str, args: list[str]) -> bool:
    if name not in _CONTAINERS:
        return False
    sub = _first_arg(args)
    if sub == "compose":  # docker compose ps: a read like docker ps
        sub = _first_arg(args[args.index("compose") + 1 :])
    return sub != "" and sub not in _CONTAINER_READS


def _network_write(name: str, args: list[str]) -> bool:
    if name == "curl":
        for i, a in enumerate(args):
            method = args[i + 1] if a in ("-X", "--request") and i + 1 < len(args) else ""
            cluster = re.fullmatch(r"-[a-zA-Z]*X(.*)", a)
            if cluster is not None:  # -X POST, -XPOST, -sSX POST
                method = cluster.group(1) or (args[i + 1] if i + 1 < len(args) else "")
            if a.startswith("--request="):
                method = a.split("=", 1)[1]
            if method.upper() in _WRITE_METHODS:
                return True
            if a in ("-d", "-F", "-T", "--form", "--upload-file", "--json") or a.startswith(
                ("--data", "-d", "-F")
            ):
                return True
        return False
    if name == "wget":
        return any(
            a.startswith(("--post-data", "--post-file", "--method=P", "--method=D", "--body-")) for a in args
        )
    if name in ("http", "https", "xh"):
        return _first_arg(args).upper() in _WRITE_METHODS
    return False


def _git(name: str, args: list[str]) -> bool:
    return name == "git" and _first_arg(_git_args(args)) == "push"


def _git_args(args: list[str]) -> list[str]:
    """git's own options (``-C dir``, ``-c k=v``) skipped."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-C", "-c", "--git-dir", "--work-tree") else 1
    return args[i:]


def _remote(name: str, args: list[str]) -> bool:
    if name in ("scp", "rsync", "sftp"):
        return any(_REMOTE_ARG.match(a) for a in args if not a.startswith("-"))
    return name == "ssh" and len([a for a in args if not a.startswith("-")]) >= 2


def _services(name: str, args: list[str]) -> bool:
    return name in _SERVICES and _first_arg(args) in {
        "start",
        "stop",
        "restart",
        "enable",
        "disable",
        "reload",
        "load",
        "unload",
    }


class _Outside:
    """Whether a path names something outside the workspace."""

    def __init__(self, workspace: str | None) -> None:
        self._root = posixpath.normpath(workspace.replace("\\", "/")) if workspace else None

    def __call__(self, path: str) -> bool:
        if path.startswith("~"):
            return True
        if not path.startswith("/"):
            return False  # relative: under the command's directory (the workspace)
        norm = posixpath.normpath(path)
        if norm in _SAFE_DEVICES or norm.startswith("/dev/fd/"):
            return False
        if self._root is None:
            return True
        return not (norm == self._root or norm.startswith(self._root.rstrip("/") + "/"))


def _copies_out(name: str, args: list[str], outside: _Outside) -> bool:
    if name == "dd":
        return any(a.startswith("of=") and outside(a[3:]) for a in args)
    if name in ("sed", "perl") and any(a.startswith("-i") or a.startswith("-pi") for a in args):
        return any(outside(a) for a in args if not a.startswith("-"))
    if name not in _COPIERS:
        return False
    paths = [a for a in args if not a.startswith("-")]
    if name in ("cp", "install", "ln", "rsync"):
        paths = paths[-1:]  # the destination
    return any(outside(p) for p in paths)


_RULES: tuple[tuple[str, Callable[[str, list[str]], bool]], ...] = (
    (INSTALL, _installs),
    (CONTAINER, _containers),
    (DATABASE, lambda name, _args: name in _DATABASES),
    (NETWORK, _network_write),
    (PUSH, _git),
    (REMOTE, _remote),
    (SERVICE, _services),
)


def _redirect_target(text: str) -> str | None:
    """The file an output redirection writes (``> /etc/x`` → ``/etc/x``; input and fd
    duplications → ``None``)."""
    m = re.match(r"^\s*(?:\d+|&)?(>>|>\||>|&>|&>>)\s*(.*)$", text, re.S)
    if m is None or m.group(2).startswith("&"):
        return None
    words = _words(m.group(2))
    return words[0] if words else None


class _Classifier:
    def __init__(self, workspace: str | None) -> None:
        self.outside = _Outside(workspace)
        self.found: list[SideEffect] = []

    def add(self, kind: str, command: str) -> None:
        piece = command.strip()
        if not any(f.kind == kind for f in self.found):
            self.found.append(SideEffect(kind, piece[:200]))

    def command(self, text: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        for part in split_command(text[:MAX_COMMAND]).parts:
            self.part(part, depth)

    def part(self, part: CommandPart, depth: int) -> None:
        plain = "".join(s.text for s in part.spans if s.kind == "text")
        whole = "".join(s.text for s in part.spans if s.kind != "heredoc")
        for span in part.spans:
            if span.kind == "substitution":
                inner = span.text[2:-1] if span.text.startswith(("$(", "<(", ">(")) else span.text.strip("`")
                self.command(inner, depth + 1)
            elif span.kind == "redirection":
                target = _redirect_target(span.text)
                if target is not None and self.outside(target):
                    self.add(OUTSIDE, whole)
        name, args = _program(_words(plain))
        if args and all(a in _ONLY_ASKING for a in args):
            return  # psql --version, docker --help: nothing happens
        if name in ("sh", "bash", "zsh", "dash") and "-c" in args:
            at = args.index("-c")
            if at + 1 < len(args):
                self.command(args[at + 1], depth + 1)
            return
        for kind, rule in _RULES:
            if rule(name, args):
                self.add(kind, whole)
        if _copies_out(name, args, self.outside):
            self.add(OUTSIDE, whole)


def side_effects(command: str, workspace: str | None = None) -> list[SideEffect]:
    """What ``command`` evidently does outside ``workspace`` (absolute POSIX path; ``None``: any
    absolute path counts as outside), each kind once, in the order met."""
    classifier = _Classifier(workspace)
    classifier.command(command, 0)
    return classifier.found


def is_shell_tool(tool: str | None) -> bool:
    """Whether ``tool`` (a tool name, any case) takes a shell command."""
    return tool is not None and tool.lower() in SHELL_TOOLS


def command_of_label(tool: str, label: str) -> str:
    """The command a shell tool call's checkpoint label holds ("run_command: npm i -g x" → "npm i
    -g x"; another agent's label is the command alone)."""
    prefix = f"{tool}: "
    return label[len(prefix) :] if label.startswith(prefix) else label


META_KEY = "sideEffects"
"""Where a tool call's checkpoint records them (``meta["sideEffects"]``: the kinds)."""


def side_effect_meta(tool: str | None, command: object, workspace: str) -> dict[str, list[str]]:
    """The ``meta`` entry for a tool call's checkpoint: ``{"sideEffects": [kinds]}`` for a shell
    command with evident effects outside ``workspace``, else ``{}``."""
    if not is_shell_tool(tool) or not isinstance(command, str):
        return {}
    kinds = [e.kind for e in side_effects(command, workspace)]
    return {META_KEY: kinds} if kinds else {}


KNOWN_KINDS = frozenset({INSTALL, CONTAINER, DATABASE, NETWORK, PUSH, REMOTE, OUTSIDE, SERVICE})


def kinds_in_meta(meta: object) -> list[str]:
    """The kinds a checkpoint's ``meta`` records (unknown or malformed entries dropped)."""
    value = meta.get(META_KEY) if isinstance(meta, dict) else None
    if not isinstance(value, list):
        return []
    return [k for k in value if isinstance(k, str) and k in KNOWN_KINDS]
