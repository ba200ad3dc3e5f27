"""The option types under the module name ArcticDB gives them (``arcticdb.options``), so that
``from arcticlite.options import LibraryOptions`` works after switching the import."""

from arcticlite.library import (
    ArrowOutputStringFormat,
    EncodingVersion,
    EnterpriseLibraryOptions,
    LibraryOptions,
    ModifiableEnterpriseLibraryOption,
    ModifiableLibraryOption,
    OutputFormat,
    RuntimeOptions,
)

__all__ = [
    "ArrowOutputStringFormat",
    "EncodingVersion",
    "EnterpriseLibraryOptions",
    "LibraryOptions",
    "ModifiableEnterpriseLibraryOption",
    "ModifiableLibraryOption",
    "OutputFormat",
    "RuntimeOptions",
]
