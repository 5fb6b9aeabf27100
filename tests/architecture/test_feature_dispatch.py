"""The server's lifecycle names no feature: a feature is a module in ``lsp/features/`` plus one
line in the composition root's registry (:func:`retrace.lsp.main.features`).

* The modules that run the hooks — the agent host, ``apply_settings``, start-up, shutdown, the
  LSP lifecycle handlers, the lifecycle itself — never dispatch on an agent event's type or a
  feature's type (``isinstance`` or ``match``): that is each feature's own ``on_event``. The
  host's old ladder is planted below and caught.
* The host and the settings import no feature's module and no service a feature adapts.
* Only the composition root (and the features themselves) import ``retrace.lsp.features``.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from retrace.agent import notifications
from retrace.lsp import features as features_package
from retrace.lsp.feature_lifecycle import Feature

SERVER = Path(__file__).resolve().parents[2] / "server"
LSP = SERVER / "retrace" / "lsp"

HOOK_RUNNERS = (
    "host.py",
    "settings.py",
    "startup.py",
    "feature_lifecycle.py",
    "main.py",
    "handlers/lifecycle.py",
)
"""Where the lifecycle's hooks are run (or the registry built): no dispatch on types there."""

NO_FEATURE_IMPORTS = ("host.py", "settings.py")
FEATURE_MODULES = (
    "retrace.lsp.features",
    "retrace.lsp.folder_remotes",
    "retrace.lsp.folder_settings",
    "retrace.lsp.services.remote",
    "retrace.lsp.services.metrics",
    "retrace.lsp.services.git_mirror",
    "retrace.lsp.services.relay",
    "retrace.lsp.services.timeline",
    "retrace.lsp.services.auto_gc",
    "retrace.lsp.services.store_health",
)


def event_names() -> set[str]:
    return {
        name
        for name, value in vars(notifications).items()
        if inspect.isclass(value) and issubclass(value, notifications.EventBase)
    }


def feature_names() -> set[str]:
    names = set()
    for path in (LSP / "features").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names |= {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    return names


def _named(node: ast.AST) -> set[str]:
    """The class names a type expression mentions: ``A``, ``m.A``, ``(A, B)``, ``A | B``."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def type_dispatch(source: str, forbidden: set[str]) -> list[str]:
    """``isinstance``/``issubclass`` calls and ``match`` class patterns naming a forbidden class."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            if node.func.id in {"isinstance", "issubclass"} and len(node.args) == 2:
                hit = _named(node.args[1]) & forbidden
                if hit:
                    found.append(f"line {node.lineno}: {node.func.id} on {', '.join(sorted(hit))}")
        elif isinstance(node, ast.MatchClass):
            hit = _named(node.cls) & forbidden
            if hit:
                found.append(f"line {node.lineno}: case {', '.join(sorted(hit))}")
    return found


def imports(source: str, module: str) -> set[str]:
    """Every module ``source`` (the module ``module``) imports, anywhere in it."""
    out = set()
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - node.level + 1], base]).strip(".")
            out.add(base)
            out |= {f"{base}.{alias.name}" for alias in node.names}
    return out


FORBIDDEN = event_names() | feature_names() | {"Feature"}


def test_the_sets_are_not_empty() -> None:
    assert {"CheckpointCreated", "TurnFinished", "TurnStarted"} <= event_names()
    assert "RemoteSyncFeature" in feature_names() and "TimelineEventsFeature" in feature_names()
    assert "Feature" in FORBIDDEN and Feature.__name__ == "Feature"


def test_no_type_dispatch_where_the_hooks_run() -> None:
    found = {
        name: hits
        for name in HOOK_RUNNERS
        if (hits := type_dispatch((LSP / name).read_text(encoding="utf-8"), FORBIDDEN))
    }
    assert found == {}, f"dispatch on event or feature types belongs in a feature's hook: {found}"


OLD_LADDER = """
async def emit(self, event):
    self.server.send_notification("retrace/agent/event", event)
    if ready is not None and isinstance(event, TurnStarted | ConversationChanged):
        await ready.run(lambda _e: timeline.journal_changed(ready, event))
    if remote is not None and isinstance(event, notifications.CheckpointCreated):
        remote.checkpoint_created()
    match event:
        case TurnFinished(session_id=sid):
            await git_mirror.turn_ended(self.server, ready, sid)
    for feature in features:
        if isinstance(feature, (RemoteSyncFeature, Feature)):
            pass
"""


def test_the_rule_catches_the_old_ladder() -> None:
    assert type_dispatch(OLD_LADDER, FORBIDDEN) == [
        "line 4: isinstance on ConversationChanged, TurnStarted",
        "line 6: isinstance on CheckpointCreated",
        "line 9: case TurnFinished",
        "line 12: isinstance on Feature, RemoteSyncFeature",
    ]
    assert type_dispatch("isinstance(x, dict)\nisinstance(e, ValueError)\n", FORBIDDEN) == []


def test_the_host_and_the_settings_import_no_feature() -> None:
    found = {}
    for name in NO_FEATURE_IMPORTS:
        module = "retrace.lsp." + name.removesuffix(".py")
        imported = imports((LSP / name).read_text(encoding="utf-8"), module)
        hits = sorted(m for m in imported if any(m == f or m.startswith(f + ".") for f in FEATURE_MODULES))
        if hits:
            found[name] = hits
    assert found == {}, f"reach features through server.features, not by import: {found}"


def test_the_import_rule_catches_a_planted_import() -> None:
    planted = "from retrace.lsp.services import git_mirror, timeline\nfrom .features.remote_sync import X\n"
    imported = imports(planted, "retrace.lsp.host")
    assert {"retrace.lsp.services.git_mirror", "retrace.lsp.features.remote_sync"} <= imported


def test_only_the_composition_root_imports_the_features() -> None:
    package = features_package.__name__
    importers = []
    for path in sorted((SERVER / "retrace").rglob("*.py")):
        module = ".".join(path.relative_to(SERVER).with_suffix("").parts).removesuffix(".__init__")
        if module == package or module.startswith(package + "."):
            continue
        if any(
            m == package or m.startswith(package + ".")
            for m in imports(path.read_text(encoding="utf-8"), module)
        ):
            importers.append(module)
    assert importers == ["retrace.lsp.main"]
