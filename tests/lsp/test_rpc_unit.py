"""The registration layer in isolation: params stay dicts, errors map to JSON-RPC codes."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams, JsonRpcServerNotInitialized
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage

from retrace.engine.errors import UnknownCheckpoint
from retrace.lsp.rpc import RETRACE_ERROR_CODE, NotReadyError, converter_factory, parse_params, to_rpc_error
from retrace.protocol.methods import METHODS, spec
from retrace.protocol.models import DiffParams


def test_custom_params_and_results_stay_plain_dicts() -> None:
    converter = converter_factory()
    raw = {"from": "abc", "to": None, "nested": {"class": 1}}
    request = converter.structure(
        {"jsonrpc": "2.0", "id": 1, "method": "retrace/checkpoint/diff", "params": raw}, JsonRPCRequestMessage
    )
    assert request.params == raw  # not a namedtuple, "from"/"class" not renamed
    note = converter.structure({"jsonrpc": "2.0", "method": "retrace/x"}, JsonRPCNotification)
    assert note.params is None
    response = converter.structure(
        {"jsonrpc": "2.0", "id": 3, "result": {"saved": []}}, JsonRPCResponseMessage
    )
    assert response.result == {"saved": []}


def test_params_validation_uses_wire_names() -> None:
    parsed = parse_params(spec("retrace/checkpoint/diff"), {"from": "abc"})
    assert isinstance(parsed, DiffParams) and parsed.from_ == "abc" and parsed.to is None
    with pytest.raises(JsonRpcInvalidParams, match=r"checkpoint/diff: from: Field required"):
        parse_params(spec("retrace/checkpoint/diff"), {"to": "x"})
    with pytest.raises(JsonRpcInvalidParams, match=r"\(\+1 more\)"):
        parse_params(spec("retrace/checkpoint/restore"), {"id": 1})
    assert parse_params(spec("retrace/stats"), None) is not None


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        pytest.param(UnknownCheckpoint("zz"), RETRACE_ERROR_CODE, id="retrace-error"),
        pytest.param(NotReadyError("store locked"), JsonRpcServerNotInitialized.CODE, id="not-ready"),
        pytest.param(KeyError("boom"), JsonRpcInternalError.CODE, id="bug"),
    ],
)
def test_exceptions_map_to_error_codes(exc: Exception, code: int) -> None:
    error = to_rpc_error("retrace/x", exc)
    assert error.code == code
    assert "\n" not in error.message


def test_retrace_errors_carry_their_code() -> None:
    error = to_rpc_error("retrace/checkpoint/get", UnknownCheckpoint("zz"))
    assert error.data == {"code": "unknownCheckpoint"}
    assert "unknown checkpoint id 'zz'" in error.message


def test_every_client_method_has_a_handler() -> None:
    from retrace.lsp.handlers import CLIENT_METHOD_HANDLERS

    client_methods = {m.name for m in METHODS if m.direction.startswith("client")}
    assert set(CLIENT_METHOD_HANDLERS) == client_methods
