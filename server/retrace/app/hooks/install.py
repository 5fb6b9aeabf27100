"""Per-agent install knowledge and the pure merge of Retrace's hook entries into an agent's settings.

Each supported agent's adapter (:class:`~retrace.app.hooks.adapter.AgentAdapter`, in its own
module beside its parser) carries one :class:`AgentInstall`: where its settings file lives, which
hook events Retrace listens to (and with which matcher), the timeout in the agent's own unit, the
variable the agent sets to the project folder, and any switch the agent needs to run hooks at
all. ``registry.install_for`` finds it by agent name.

The documented shapes (both agents use the same nesting):

- Claude Code, ``<workspace>/.claude/settings.local.json`` (the project-local file Claude Code
  keeps out of git): ``{"hooks": {"<Event>": [{"matcher": "*", "hooks": [{"type": "command",
  "command": "...", "timeout": <seconds>}]}]}}``; ``*`` matches every tool; events without
  tools (``UserPromptSubmit``, ``Stop``) take no matcher. Retrace listens to every event its
  hook adapter reads: the session's start and end, a prompt, before and after each tool (a
  failed one included), the turn's end (an API error included).
- Gemini CLI, ``<workspace>/.gemini/settings.json``: the same nesting, ``timeout`` in
  milliseconds, an optional ``name`` (``/hooks disable <name>``) and ``description``; the hook
  system is switched on by ``hooksConfig.enabled`` (set to ``true`` when absent; a user's explicit
  ``false`` is kept and reported).

Contracts of the pure functions (:func:`merge`, :func:`remove`), table- and property-tested:

- Retrace's entries are recognised by their command alone (:func:`is_ours`: it runs
  ``-m retrace hook <agent>``), whatever interpreter path it names, so a stale entry (another
  interpreter) is replaced, never duplicated.
- Everything else (other keys, other events, other matcher groups, other hooks in a group Retrace
  shares) stays, in order. Inputs are never mutated.
- :func:`merge` is idempotent: when the document already holds exactly Retrace's entries it is
  reported ``unchanged`` and the caller writes nothing (same bytes). Otherwise every Retrace
  entry is taken out and Retrace's groups are appended at the end of each event's list.
- :func:`remove` takes out only Retrace's entries and drops the containers (matcher group,
  event list, ``hooks`` object) that taking them out emptied. When what remains is nothing but
  what Retrace itself adds (``{}``, or Gemini's ``{"hooksConfig": {"enabled": true}}``), the
  plan says "delete the file": a file Retrace created leaves no trace, and such a file holds
  nothing of the user's.
- A document whose ``hooks`` is not an object, or whose list for one of Retrace's events is not
  a list, is refused (:class:`SettingsShapeError`), never rewritten.
"""

from __future__ import annotations

import copy
import re
import shlex
from dataclasses import dataclass
from typing import Any, Literal

from retrace.engine.errors import RetraceError

Action = Literal["added", "updated", "removed", "unchanged"]

HOOK_NAME = "retrace-checkpoints"
"""Gemini CLI's ``name`` of Retrace's hook entries (what ``/hooks disable`` takes)."""

HOOK_TIMEOUT_S = 10
"""How long the agent lets one Retrace hook run. The hook answers in milliseconds and always
exits 0; this only bounds a pathological stall (a store on a hung network disk)."""


class SettingsShapeError(RetraceError):
    """The settings document has a shape Retrace cannot merge into without losing something."""

    code = "agentSettingsInvalid"


@dataclass(frozen=True)
class HookRegistration:
    """One hook event Retrace registers for in the agent's settings, with its matcher."""

    name: str
    matcher: str | None
    """``None``: the matcher group carries no ``matcher`` key (events that are not about a tool)."""


@dataclass(frozen=True)
class AgentInstall:
    """Everything Retrace needs to know to install its hooks into one agent's settings."""

    name: str
    """``claude-code``, ``gemini-cli``: the adapter name (``retrace hook <name>``)."""
    title: str
    settings_dir: str
    """Folder below the workspace holding the settings file (never a symlink)."""
    settings_file: str
    project_dir_variable: str
    """Environment variable the agent sets to the project folder when it runs a hook."""
    events: tuple[HookRegistration, ...]
    timeout: int
    """In the agent's unit (seconds for Claude Code, milliseconds for Gemini CLI)."""
    named: bool
    """The hook entry carries ``name`` and ``description`` (Gemini CLI)."""
    enable_switch: tuple[str, str] | None
    """``(object, key)`` set to ``true`` when absent so the agent runs hooks at all."""
    disable_all_key: str | None = None
    """A top-level key that, ``true``, turns every hook off (reported, never changed)."""
    shared_file: bool = False
    """The settings file is usually committed (no local-only variant): adding says so, since
    Retrace's entries name this machine's interpreter."""

    @property
    def settings_rel(self) -> str:
        return f"{self.settings_dir}/{self.settings_file}"

    def hook_entry(self, command: str) -> dict[str, Any]:
        entry: dict[str, Any] = {}
        if self.named:
            entry["name"] = HOOK_NAME
        entry["type"] = "command"
        entry["command"] = command
        entry["timeout"] = self.timeout
        if self.named:
            entry["description"] = "Retrace: a checkpoint of the workspace after every tool call"
        return entry

    def group(self, event: HookRegistration, command: str) -> dict[str, Any]:
        group: dict[str, Any] = {}
        if event.matcher is not None:
            group["matcher"] = event.matcher
        group["hooks"] = [self.hook_entry(command)]
        return group

    @property
    def event_names(self) -> list[str]:
        return [e.name for e in self.events]


def hook_command(spec: AgentInstall, python: str) -> str:
    """The command the agent runs: the absolute interpreter (quoted for a POSIX shell) running
    ``-m retrace hook <agent>`` for the project folder the agent names in its environment, so it
    works without ``retrace`` on ``PATH`` and after the folder moves. When the agent names none
    the argument is empty and ``retrace hook`` falls back to its own rule (the event's ``cwd``).
    ``-P``: the project folder is not put on ``sys.path`` (a folder holding its own ``retrace``
    package cannot shadow Retrace). The braced ``${VAR:-}`` form on purpose: Gemini CLI replaces
    a bare ``$GEMINI_PROJECT_DIR`` / ``$CLAUDE_PROJECT_DIR`` in the text with a single-quoted
    path, which inside double quotes would keep its quotes; the braced form is left to the shell."""
    project = f'"${{{spec.project_dir_variable}:-}}"'
    return f"{shlex.quote(python)} -P -m retrace hook {spec.name} --workspace {project}"


def is_ours(hook: object, agent: str) -> bool:
    """Whether a hook entry is one of Retrace's for ``agent`` (recognised by its command)."""
    if not isinstance(hook, dict):
        return False
    command = hook.get("command")
    if not isinstance(command, str):
        return False
    return re.search(rf"(?:^|\s)-m\s+retrace\s+hook\s+{re.escape(agent)}(?:\s|$)", command) is not None


def interpreter_of(command: str) -> str | None:
    """The program a hook command runs (its first shell word), ``None`` when it does not split."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    return words[0] if words else None


@dataclass(frozen=True)
class Plan:
    """What to do with the settings file: write ``doc`` (``None``: delete the file), or nothing
    when ``action`` is ``unchanged``."""

    doc: dict[str, Any] | None
    action: Action
    notes: tuple[str, ...] = ()


def _hooks_object(doc: dict[str, Any], spec: AgentInstall) -> dict[str, Any] | None:
    hooks = doc.get("hooks")
    if hooks is None and "hooks" not in doc:
        return None
    if not isinstance(hooks, dict):
        raise SettingsShapeError(f"'hooks' in {spec.settings_rel} is not an object; left untouched")
    for name in spec.event_names:
        if name in hooks and not isinstance(hooks[name], list):
            raise SettingsShapeError(f"'hooks.{name}' in {spec.settings_rel} is not a list; left untouched")
    return hooks


def _in_place(hooks: dict[str, Any] | None, spec: AgentInstall, command: str) -> bool:
    """Retrace's entries are exactly the wanted ones: one group of Retrace's own shape per event
    it listens to, and no Retrace entry anywhere else."""
    if hooks is None:
        return False
    for name, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        wanted = next((e for e in spec.events if e.name == name), None)
        ours = [
            g for g in groups if isinstance(g, dict) and any(is_ours(h, spec.name) for h in _hook_list(g))
        ]
        expected = [] if wanted is None else [spec.group(wanted, command)]
        if ours != expected:
            return False
    return all(e.name in hooks for e in spec.events)


def _hook_list(group: dict[str, Any]) -> list[Any]:
    hooks = group.get("hooks")
    return hooks if isinstance(hooks, list) else []


def _strip(hooks: dict[str, Any], agent: str) -> bool:
    """Take every entry of ``agent``'s out of ``hooks`` (in place), dropping the groups and event
    lists that this emptied. Returns whether anything was taken out."""
    found = False
    for name in list(hooks):
        groups = hooks[name]
        if not isinstance(groups, list):
            continue
        kept_groups: list[Any] = []
        for group in groups:
            if not isinstance(group, dict) or not any(is_ours(h, agent) for h in _hook_list(group)):
                kept_groups.append(group)
                continue
            found = True
            rest = [h for h in _hook_list(group) if not is_ours(h, agent)]
            if rest:
                kept_groups.append({**group, "hooks": rest})
        if kept_groups or not groups:
            hooks[name] = kept_groups
        else:
            del hooks[name]
    return found


def _enable(doc: dict[str, Any], spec: AgentInstall) -> tuple[bool, tuple[str, ...]]:
    """Set the agent's hook switch when absent. Returns (changed, notes)."""
    if spec.enable_switch is None:
        return False, ()
    owner, key = spec.enable_switch
    holder = doc.get(owner)
    if holder is None and owner not in doc:
        doc[owner] = {key: True}
        return True, ()
    if not isinstance(holder, dict):
        return False, (f"'{owner}' is not an object: {spec.title} may not run hooks",)
    if key not in holder:
        holder[key] = True
        return True, ()
    if holder[key] is not True:
        return False, (f"{owner}.{key} is {holder[key]!r}: {spec.title} runs no hooks until it is true",)
    return False, ()


def _disabled_note(doc: dict[str, Any], hooks: dict[str, Any], spec: AgentInstall) -> tuple[str, ...]:
    """What in the file keeps the agent from running Retrace's hooks (reported, never changed)."""
    notes: tuple[str, ...] = ()
    disabled = hooks.get("disabled")
    if spec.named and isinstance(disabled, list) and HOOK_NAME in disabled:
        notes += (f"hooks.disabled names {HOOK_NAME}: {spec.title} skips Retrace's hooks",)
    if spec.disable_all_key is not None and doc.get(spec.disable_all_key) is True:
        notes += (f"{spec.disable_all_key} is true: {spec.title} runs no hooks until it is removed",)
    return notes


def merge(doc: dict[str, Any], spec: AgentInstall, command: str) -> Plan:
    """``doc`` with Retrace's hook entries for ``spec`` (see the module contract)."""
    out = copy.deepcopy(doc)
    hooks = _hooks_object(out, spec)
    enabled, notes = _enable(out, spec)
    if _in_place(hooks, spec, command):
        assert hooks is not None
        notes += _disabled_note(out, hooks, spec)
        return Plan(out, "updated" if enabled else "unchanged", notes)
    if hooks is None:
        hooks = out["hooks"] = {}
    had = _strip(hooks, spec.name)
    for event in spec.events:
        hooks.setdefault(event.name, []).append(spec.group(event, command))
    notes += _disabled_note(out, hooks, spec)
    if spec.shared_file and not had:
        notes += (f"{spec.settings_rel} is often committed: Retrace's entries name this machine's Python",)
    return Plan(out, "updated" if had else "added", notes)


def _leftover_only(doc: dict[str, Any], spec: AgentInstall) -> bool:
    """Nothing but what Retrace itself adds is left in ``doc``."""
    if not doc:
        return True
    if spec.enable_switch is None:
        return False
    owner, key = spec.enable_switch
    return doc == {owner: {key: True}}


def remove(doc: dict[str, Any], spec: AgentInstall) -> Plan:
    """``doc`` without Retrace's hook entries for ``spec``; ``doc=None`` in the plan: delete the file."""
    out = copy.deepcopy(doc)
    hooks = _hooks_object(out, spec)
    if hooks is None:
        return Plan(out, "unchanged")
    if not _strip(hooks, spec.name):
        return Plan(out, "unchanged")
    if not hooks:  # emptied by taking Retrace's entries out
        del out["hooks"]
    return Plan(None if _leftover_only(out, spec) else out, "removed")
