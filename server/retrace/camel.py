"""The one pydantic base class for every model that is stored or sent over the wire.

Fields are snake_case in Python and camelCase in JSON (journal lines, JSON-RPC payloads,
CLI ``--json`` output). Always serialise with :func:`dump` (or ``model_dump(mode="json",
by_alias=True)``): pygls and ``json`` must only ever see plain JSON values.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel


class CamelModel(BaseModel):
    """Base model: camelCase aliases, accepts either spelling on input. Attribute docstrings
    become field descriptions in the generated schema only (``retrace.protocol.export``):
    reading them here parsed every model's source at import, in every process."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
    )


def dump(model: BaseModel) -> dict[str, Any]:
    """Plain-JSON dict of a model with camelCase keys (``None`` stays ``null``)."""
    return model.model_dump(mode="json", by_alias=True)


def validation_message(where: str, error: ValidationError) -> str:
    """One line naming the first offending field: ``retrace/x: id: Field required (+1 more)``
    (``where``: the method or section whose input it was)."""
    errors = error.errors(include_url=False)
    first = errors[0]
    loc = ".".join(str(part) for part in first["loc"]) or "params"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"invalid params for {where}: {loc}: {first['msg']}{more}"
