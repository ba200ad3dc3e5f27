"""Conversion between Parquet and Fermion, both ways, stripe by stripe (bounded memory)."""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from arcticlite.format._reader import FermionReader
from arcticlite.format._writer import DEFAULT_STRIPE_ROWS, FermionWriter
from arcticlite.progress import Progress


def from_parquet(path_or_file: Any, out_path: str | os.PathLike[str] | None = None,
                 **options: Any) -> bytes | None:
    """Convert a Parquet file to Fermion.

    Parameters
    ----------
    path_or_file
        Parquet path or binary file object.
    out_path
        Destination path; None returns the Fermion bytes.
    **options
        :class:`~arcticlite.format.FermionWriter` options (``page_size``, ``stripe_rows``...).

    Returns
    -------
    bytes or None
        The file when ``out_path`` is None.

    Notes
    -----
    Reads the Parquet file one stripe (``stripe_rows`` rows) at a time; the Arrow schema
    stored by Parquet (field and schema metadata, dictionary and timezone types) is kept.
    """
    pf = pq.ParquetFile(path_or_file)
    schema = pf.schema_arrow
    rows = int(options.get("stripe_rows", DEFAULT_STRIPE_ROWS))
    w = FermionWriter(out_path, schema, **options)
    try:
        with Progress(pf.metadata.num_rows, "to Fermion", unit="row") as bar:
            for batch in pf.iter_batches(batch_size=min(rows, 1 << 20)):
                w.write(pa.Table.from_batches([batch]).cast(schema))
                bar.update(batch.num_rows)
    except BaseException:
        w.__exit__(RuntimeError, None, None)
        raise
    return w.close()


def to_parquet(source: Any, out_path: str | os.PathLike[str] | Any,
               compression: str | None = "zstd", **parquet_options: Any) -> None:
    """Convert a Fermion file (path, bytes or file object) to Parquet.

    Parameters
    ----------
    source
        The Fermion file.
    out_path
        Parquet destination (path or writable binary file).
    compression
        Parquet codec (``"zstd"``, ``"snappy"``, ``None``...).
    **parquet_options
        Passed to :class:`pyarrow.parquet.ParquetWriter`.
    """
    with FermionReader(source) as r:
        schema = r.schema
        starts = r.stripe_starts()
        with pq.ParquetWriter(out_path, schema, compression=compression, **parquet_options) as w:
            if r.num_rows == 0:
                w.write_table(r.read())
            with Progress(r.num_rows, "to Parquet", unit="row") as bar:
                for a, b in zip(starts[:-1], starts[1:], strict=True):
                    w.write_table(r.read(row_range=(a, b)))
                    bar.update(b - a)
