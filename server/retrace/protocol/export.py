"""Write ``shared-schema/protocol.schema.json`` and ``shared-schema/methods.json``.

``python -m retrace.protocol.export [--out DIR]`` (``npm run schema`` runs it, then
``scripts/gen-ts.mjs``). Output is deterministic: keys sorted, ``$defs`` sorted, trailing newline.

Schema modes follow the direction of travel: what the client SENDS is described as pydantic
validates it (fields with defaults optional); what the server SENDS is described as ``dump``
produces it (every field present, so TypeScript sees it as required). A model that travels both
ways with different shapes would get ``-Input``/``-Output`` twins; the protocol avoids that by
keeping shared models (``EditorState``) free of defaults.
"""

from __future__ import annotations

import argparse
import ast
import functools
import inspect
import itertools
import json
import textwrap
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, models_json_schema
from pydantic_core import core_schema

from retrace.protocol.methods import EXTRA_MODELS, METHODS, MethodSpec

REF_PREFIX = "#/$defs/"
DEFAULT_OUT = Path(__file__).resolve().parents[3] / "shared-schema"


class _WireSchema(GenerateJsonSchema):
    """Serialization schemas list every field as required: ``dump`` always writes them all."""

    def field_is_required(
        self,
        field: core_schema.ModelField | core_schema.DataclassField | core_schema.TypedDictField,
        total: bool,
    ) -> bool:
        if self.mode == "serialization":
            return field.get("serialization_exclude_if") is None
        return super().field_is_required(field, total)

    def model_schema(self, schema: core_schema.ModelSchema) -> dict[str, Any]:
        """Each field's attribute docstring as its description (``CamelModel`` does not read
        them at import: parsing every model's source cost every process that imports a model —
        the command line, the server's start — for a schema only this export writes)."""
        json_schema = super().model_schema(schema)
        cls = schema["cls"]
        properties = json_schema.get("properties")
        if not isinstance(properties, dict) or not issubclass(cls, BaseModel):
            return json_schema
        for name, field in cls.model_fields.items():
            prop = properties.get(field.alias or name)
            doc = field_doc(cls, name)
            if isinstance(prop, dict) and doc is not None and "description" not in prop:
                prop["description"] = doc
        return json_schema


def field_doc(cls: type, name: str) -> str | None:
    """The docstring under ``name``'s annotation in the class of ``cls``'s MRO that declares it
    (pydantic's ``use_attribute_docstrings`` rule: an override without one has none)."""
    for klass in cls.__mro__:
        if name in vars(klass).get("__annotations__", {}):
            return _attribute_docs(klass).get(name)
    return None


@functools.cache
def _attribute_docs(klass: type) -> dict[str, str]:
    try:
        source = textwrap.dedent(inspect.getsource(klass))
    except (OSError, TypeError):
        return {}
    body = ast.parse(source).body
    if not body or not isinstance(body[0], ast.ClassDef):
        return {}
    docs: dict[str, str] = {}
    stmts = body[0].body
    for stmt, following in itertools.pairwise(stmts):
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[stmt.target.id] = inspect.cleandoc(following.value.value)
    return docs


Sender = Literal["client", "server"]


def _modes(method: MethodSpec) -> tuple[JsonSchemaMode, JsonSchemaMode]:
    """(params mode, result mode) for a method: validation for what the client sends."""
    client_sends_params = method.direction in ("clientRequest", "clientNotification")
    params_mode: JsonSchemaMode = "validation" if client_sends_params else "serialization"
    result_mode: JsonSchemaMode = "serialization" if client_sends_params else "validation"
    return params_mode, result_mode


def build() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(protocol schema, method table)."""
    inputs: list[tuple[type[BaseModel], JsonSchemaMode]] = []
    for method in METHODS:
        params_mode, result_mode = _modes(method)
        inputs.append((method.params, params_mode))
        if method.result is not None:
            inputs.append((method.result, result_mode))
    inputs.extend((model, "validation") for model in EXTRA_MODELS)
    unique = list(dict.fromkeys(inputs))
    refs, schema = models_json_schema(
        unique, ref_template=REF_PREFIX + "{model}", schema_generator=_WireSchema
    )
    defs: dict[str, Any] = schema.get("$defs", {})

    def ref_of(model: type[BaseModel], mode: JsonSchemaMode) -> str:
        return str(refs[(model, mode)]["$ref"])

    table: list[dict[str, Any]] = []
    for method in METHODS:
        params_mode, result_mode = _modes(method)
        table.append(
            {
                "key": method.key,
                "name": method.name,
                "direction": method.direction,
                "params": ref_of(method.params, params_mode),
                "result": None if method.result is None else ref_of(method.result, result_mode),
                "doc": method.doc,
            }
        )
    protocol = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://retrace.dev/shared-schema/protocol.schema.json",
        "title": "Retrace JSON-RPC protocol",
        "description": "Generated from server/retrace/protocol by `npm run schema`. Do not edit.",
        "$defs": dict(sorted(defs.items())),
    }
    return protocol, table


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n", "utf-8")


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    protocol, table = build()
    _write_json(out / "protocol.schema.json", protocol)
    _write_json(out / "methods.json", {"methods": table})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    args = parser.parse_args(argv)
    write(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
