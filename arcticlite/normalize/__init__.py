"""Normalization: user objects (pandas, Arrow, polars, numpy) to stored Arrow tables and back.

:func:`normalize` turns what a user writes into an Arrow table (index columns first) and a
:class:`NormMeta` describing how to rebuild it; :func:`denormalize` rebuilds it. The engine
layer (:mod:`arcticlite.table`) stores and reads only Arrow tables and the metadata's JSON;
everything pandas-specific lives here. Depends only on :mod:`arcticlite.exceptions`.
"""

from arcticlite.normalize._columns import (
    DICTIONARY_VALUES,
    arrow_to_pandas,
    value_schema,
    value_table,
)
from arcticlite.normalize._frames import (
    STRING_FORMATS,
    OutputFormat,
    arrow_columns,
    column_labels,
    datetime_index,
    denormalize,
    index_from_table,
    normalize,
    with_string_format,
)
from arcticlite.normalize._meta import FORMAT_VERSION, NormMeta
from arcticlite.normalize._nanrows import (
    SPARSE_KEY,
    is_nan_rows_name,
    nan_rows_name,
    segment_companions,
    segment_kinds,
    segment_nan_rows,
    sparse_columns,
    split_nan_rows,
    unsparse,
)
from arcticlite.normalize._rowmajor import ROW_MAJOR, RowMajorBlock, fill_rows, has_placeholders
from arcticlite.normalize._schema import (
    common_meta,
    common_schema,
    common_type,
    refuse_none_with_values,
    sortedness,
    text_like,
    type_name,
)
from arcticlite.normalize._time import as_of_to_ns, check_bound, to_ns_bound

__all__ = [
    "SPARSE_KEY",
    "DICTIONARY_VALUES",
    "FORMAT_VERSION",
    "ROW_MAJOR",
    "STRING_FORMATS",
    "NormMeta",
    "OutputFormat",
    "RowMajorBlock",
    "arrow_columns",
    "arrow_to_pandas",
    "as_of_to_ns",
    "check_bound",
    "column_labels",
    "common_meta",
    "common_schema",
    "common_type",
    "datetime_index",
    "denormalize",
    "fill_rows",
    "has_placeholders",
    "index_from_table",
    "is_nan_rows_name",
    "nan_rows_name",
    "normalize",
    "refuse_none_with_values",
    "segment_companions",
    "segment_kinds",
    "segment_nan_rows",
    "sortedness",
    "sparse_columns",
    "split_nan_rows",
    "unsparse",
    "text_like",
    "to_ns_bound",
    "type_name",
    "value_schema",
    "value_table",
    "with_string_format",
]
