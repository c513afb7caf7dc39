from __future__ import annotations

from gpuscout.service.validation_text import error_message


def test_a_validators_message_loses_pydantics_prefix_and_nothing_else() -> None:
    assert error_message({"msg": "Value error, --preset: unknown"}) == "--preset: unknown"
    assert error_message({"msg": "Input should be greater than 0"}) == (
        "Input should be greater than 0"
    )
    assert error_message({}) == ""
