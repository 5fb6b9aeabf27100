"""``retrace export`` (a checkpoint to a new git branch, or a range to a patch series) and
``retrace attribution`` (who wrote which lines): parse, open the store read-only, call the
application service, print. Every refusal is one line (exit 1, the CLI's policy for errors)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from retrace.app.attribution import META_KEY, attribution
from retrace.app.handoff.export import export_branch, export_patches
from retrace.cli import commands
from retrace.cli.commands import CliError
from retrace.cli.format import quote_name, say
from retrace.protocol.handoff import TraceRecord


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def cmd_export(args: argparse.Namespace) -> int:
    with commands.open_readonly(args) as engine:
        if args.patch is not None:
            a_ref, sep, b_ref = args.id.partition("..")
            if not sep or not a_ref or not b_ref:
                raise CliError("--patch takes a range A..B")
            a, b = commands.resolve(engine, a_ref), commands.resolve(engine, b_ref)
            res = export_patches(engine, a, b, Path(args.patch), author=args.author, base=args.base)
            if args.json:
                _print_json({"patches": res.patches, "commits": res.commits, "base": res.base})
            else:
                for name in res.patches:
                    say(quote_name(name))
                if not res.patches:
                    say("no changes between the checkpoints: no patch written")
            return 0
        if ".." in args.id:
            raise CliError("a range A..B needs --patch DIR")
        cp = commands.resolve(engine, args.id)
        out = export_branch(engine, cp, args.branch, message=args.message, author=args.author, base=args.base)
        if args.json:
            _print_json({"commit": out.commit, "branch": out.branch, "files": out.files, "base": out.base})
        else:
            say(f"{out.commit} {quote_name(out.branch)} ({out.files} files from checkpoint {cp})")
    return 0


def cmd_attribution(args: argparse.Namespace) -> int:
    with commands.open_readonly(args) as engine:
        a = commands.resolve(engine, args.a) if args.a else None
        b = commands.resolve(engine, args.b)
        report = attribution(engine, a, b)
        if args.json:
            _print_json(report.model_dump(mode="json", exclude_none=True))
        else:
            say(fmt_attribution(report))
    return 0


def fmt_attribution(report: TraceRecord) -> str:
    """Per file, each line range: who (ai, human, unknown), the checkpoint's kind/tool and id."""
    meta = report.metadata[META_KEY]
    out: list[str] = []
    for f in report.files:
        out.append(quote_name(f.path))
        rows = sorted((r.start_line, r.end_line, c) for c in f.conversations for r in c.ranges)
        for start, end, conv in rows:
            cp = conv.related[0].url.removeprefix("retrace:checkpoint/")
            info = meta.checkpoints[cp]
            what = info.kind + (f" {info.tool}" if info.tool else "")
            out.append(f"  {start}-{end}  {conv.contributor.type} ({what})  {cp}")
    for path in meta.binary:
        out.append(f"{quote_name(path)}  (not text: written by {meta.file_owners[path]})")
    return "\n".join(out) if out else "no files"
