"""The value encodings Fermion pages use (owned by ``arcticlite.format._encodings``)."""

from __future__ import annotations

from arcticlite.format._encodings import (
    decode_binary,
    decode_fixed,
    describe,
    encode_binary,
    encode_binary_dictionary,
    encode_fixed,
)

__all__ = ["decode_binary", "decode_fixed", "describe", "encode_binary", "encode_binary_dictionary",
           "encode_fixed"]
