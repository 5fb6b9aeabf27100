"""Entries built without validation (make_entry, decode_snapshot) behave exactly like validated
ones, although they share one "fields set"."""

from __future__ import annotations

import pytest

from retrace.engine.manifest import decode_snapshot, encode_snapshot, make_entry
from retrace.engine.models import FileEntry

VALIDATED = [
    FileEntry(kind="file", hash="a" * 64, size=3),
    FileEntry(kind="file", hash="b" * 64, size=4, executable=True),
    FileEntry(kind="symlink", hash="c" * 64, size=1, target="t"),
    FileEntry(kind="file", hash=None, size=9, unstored="over size cap"),
]


@pytest.mark.parametrize("ref", VALIDATED)
def test_built_entries_equal_validated_ones(ref: FileEntry) -> None:
    built = make_entry(
        ref.kind, ref.hash, ref.size, executable=ref.executable, target=ref.target, unstored=ref.unstored
    )
    decoded = decode_snapshot(encode_snapshot({"p": ref}))["p"]
    for e in (built, decoded):
        assert e == ref
        assert e.model_dump() == ref.model_dump()
        assert e.model_dump_json() == ref.model_dump_json()
        assert e.model_fields_set == set(FileEntry.model_fields)


def test_changing_one_entry_leaves_the_others_alone() -> None:
    m = decode_snapshot(encode_snapshot({"a": VALIDATED[0], "b": VALIDATED[1]}))
    a, b = m["a"], m["b"]
    a.size = 99
    copied = b.model_copy(update={"size": 5})
    assert (a.size, b.size, copied.size) == (99, 4, 5)
    assert b == VALIDATED[1]
    assert a.model_fields_set == b.model_fields_set == set(FileEntry.model_fields)
