"""Validation of the names users give: symbols."""

from __future__ import annotations

from typing import Any

from arcticlite.exceptions import UserInputException

MAX_SYMBOL_LENGTH = 254


def check_symbol(symbol: Any) -> str:
    """Validate a symbol name; non-str names are coerced like ArcticDB does."""
    if not isinstance(symbol, str):
        if symbol is None:
            raise UserInputException("symbol must be a non-empty string, got None")
        symbol = str(symbol)
    if not symbol:
        raise UserInputException("E_INVALID_USER_ARGUMENT: symbol must be a non-empty string")
    if len(symbol) > MAX_SYMBOL_LENGTH:
        raise UserInputException(
            f"E_NAME_TOO_LONG: symbol name is {len(symbol)} characters; the limit is {MAX_SYMBOL_LENGTH}"
        )
    return symbol
