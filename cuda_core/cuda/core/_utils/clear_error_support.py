"""Small argument checks with clear errors (upstream module path
``cuda.core._utils.clear_error_support``)."""
from __future__ import annotations

from typing import NoReturn

__all__ = ["assert_type", "assert_type_str_or_bytes_like", "raise_code_path_meant_to_be_unreachable"]


def assert_type(obj: object, expected_type: type) -> None:
    """Raise TypeError naming both types unless `obj` is an `expected_type`."""
    if not isinstance(obj, expected_type):
        raise TypeError(f"Expected type {expected_type.__name__}, but got {type(obj).__name__}")


def assert_type_str_or_bytes_like(obj: object) -> None:
    """Raise TypeError unless `obj` is a str, bytes or bytearray."""
    if not isinstance(obj, (str, bytes, bytearray)):
        raise TypeError(f"Expected type str or bytes or bytearray, but got {type(obj).__name__}")


def raise_code_path_meant_to_be_unreachable() -> NoReturn:
    """Raise RuntimeError: marks a branch that correct callers never reach."""
    raise RuntimeError("This code path is meant to be unreachable.")
