"""What every command shares: opening a store without creating it, parsing ``--as-of`` /
``--date-range`` / ``--where``, reading input files, writing output files, printing tables or
JSON, and the exit codes."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any

import pandas as pd

import arcticlite as adb
from arcticlite.exceptions import (
    ArcticInvalidApiUsageException,
    BucketNotFoundError,
    CommitError,
    LibraryNotFound,
    NoDataFoundException,
    NormalizationException,
    PermissionException,
    SchemaException,
    SortingException,
    StreamDescriptorMismatch,
    UserInputException,
)

#: Exit codes (documented in ``arcticlite.cli`` and docs/cli.md).
OK, FAILED, USAGE, NOT_FOUND, BAD_INPUT, FILE_ERROR, READ_ONLY, CONFLICT = 0, 1, 2, 3, 4, 5, 6, 7


class CliError(Exception):
    """An error the command line reports in one line and exits with ``code``."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def exit_code(exc: BaseException) -> int:
    """The exit code of an error raised by a command."""
    if isinstance(exc, CliError):
        return exc.code
    if isinstance(exc, NoDataFoundException | LibraryNotFound | BucketNotFoundError):
        return NOT_FOUND
    if isinstance(exc, PermissionException):
        return READ_ONLY
    if isinstance(exc, CommitError):
        return CONFLICT
    if isinstance(exc, UserInputException | SchemaException | SortingException | NormalizationException
                  | StreamDescriptorMismatch | ArcticInvalidApiUsageException):
        return BAD_INPUT
    return FAILED


# -- opening --------------------------------------------------------------------------------------
def refuse_missing_store(uri: str) -> None:
    """A command never creates the store it is pointed at unless it writes data (an ``lmdb://``
    folder that does not exist is an error, not a new empty store)."""
    from arcticlite.storage import LmdbUri, parse_uri

    parsed = parse_uri(uri)
    if isinstance(parsed, LmdbUri) and not os.path.exists(os.path.join(parsed.path, "data.mdb")):
        raise CliError(f"no arcticlite store at {parsed.path!r} (nothing was created); check the URI, "
                       "or create it with 'arcticlite write'", NOT_FOUND)


def open_store(uri: str, *, writes: bool = False, creates: bool = False) -> adb.Arctic:
    """``Arctic(uri)``: read-only unless the command ``writes``; a missing store is refused
    unless the command ``creates`` data."""
    if not creates:
        refuse_missing_store(uri)
    return adb.Arctic(uri, read_only=not writes)


def open_library(args: argparse.Namespace, *, writes: bool = False, creates: bool = False) -> adb.Library:
    """The library ``args.library`` of ``args.uri`` (created only when the command ``creates``)."""
    ac = open_store(args.uri, writes=writes, creates=creates)
    if not ac.has_library(args.library) and not creates:
        known = ", ".join(ac.list_libraries()) or "none"
        raise CliError(f"no library {args.library!r} in {ac.get_uri()} (libraries: {known}); "
                       "'arcticlite libraries URI' lists them", NOT_FOUND)
    return ac.get_library(args.library, create_if_missing=creates)


def require_symbol(lib: adb.Library, symbol: str) -> None:
    if not lib.has_symbol(symbol):
        raise CliError(f"no symbol {symbol!r} in library {lib.name!r}; 'arcticlite symbols URI {lib.name}' "
                       "lists them", NOT_FOUND)


# -- arguments ------------------------------------------------------------------------------------
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}([ T].*)?")


def as_of(value: str | None, lib: adb.Library | None = None) -> Any:
    """``--as-of``: an int is a version id, an ISO date/time a time (UTC unless it has an offset),
    anything else a snapshot name. A snapshot named like a date (``2024-01-31``, as ArcticDB
    users often name them) is that snapshot when ``lib`` has it."""
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        pass
    if _DATE.fullmatch(value):
        if lib is not None and value in lib.list_snapshots(load_metadata=False):
            return value
        return timestamp(value, "--as-of")
    return value


def timestamp(text: str, what: str) -> pd.Timestamp:
    try:
        return pd.Timestamp(text)
    except (ValueError, TypeError):
        raise CliError(f"{what} {text!r} is not a date or time; write e.g. 2024-01-31 or "
                       "'2024-01-31 09:30'", BAD_INPUT) from None


def date_range(values: list[str] | None) -> tuple[Any, Any] | None:
    """``--date-range START END``: ISO dates or times, ``-`` for an open end."""
    if values is None:
        return None
    start, end = (None if v in ("-", "") else timestamp(v, "--date-range") for v in values)
    if start is not None and end is not None and start > end:
        raise CliError(f"--date-range {values[0]} {values[1]}: the start is after the end", BAD_INPUT)
    return start, end


def columns(value: str | None) -> list[str] | None:
    if value is None:
        return None
    cols = [c.strip() for c in value.split(",") if c.strip()]
    if not cols:
        raise CliError("--columns takes a comma-separated list of column names, e.g. --columns px,qty", BAD_INPUT)
    return cols


_WHERE_OPS = ("==", "!=", "<=", ">=", "<", ">")


def where(terms: list[str]) -> Any:
    """A ``QueryBuilder`` filtering on the ANDed ``--where`` terms: ``COL OP VALUE`` (OP one of
    ``== != < <= > >=``), ``COL in [V, ...]``, ``COL isna`` / ``COL notna``; values are Python
    literals (``42``, ``1.5``, ``"text"``). None without terms."""
    import ast

    if not terms:
        return None
    q = adb.QueryBuilder()
    cond = None
    for term in terms:
        m = re.fullmatch(r"\s*([^\s=!<>]+)\s*(==|!=|<=|>=|<|>|\s+in\s+|\s+isna|\s+notna)\s*(.*)", term)
        if m is None:
            raise UserInputException(f"--where {term!r}: write COL OP VALUE (OP one of {' '.join(_WHERE_OPS)}), "
                                     "COL in [V, ...], COL isna or COL notna")
        col, op, text = m.group(1), m.group(2).strip(), m.group(3).strip()
        if op in ("isna", "notna"):
            if text:
                raise UserInputException(f"--where {term!r}: {op} takes no value")
            e = q[col].isna() if op == "isna" else q[col].notna()
        else:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                raise UserInputException(f"--where {term!r}: {text!r} is not a literal; quote strings "
                                         "('ticker == \"T1\"')") from None
            if op == "in":
                if not isinstance(value, list | tuple | set):
                    raise UserInputException(f"--where {term!r}: 'in' takes a list, e.g. [1, 2]")
                e = q[col].isin(list(value))
            else:
                e = {"==": q[col] == value, "!=": q[col] != value, "<": q[col] < value, "<=": q[col] <= value,
                     ">": q[col] > value, ">=": q[col] >= value}[op]
        cond = e if cond is None else cond & e
    return q[cond]


# -- files ----------------------------------------------------------------------------------------
_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".arrow": "arrow", ".ipc": "arrow",
            ".feather": "arrow"}


def file_format(path: str, given: str | None, what: str) -> str:
    if given is not None:
        return given
    fmt = _FORMATS.get(os.path.splitext(path)[1].lower())
    if fmt is None:
        raise CliError(f"{what} {path!r}: cannot tell the format from its extension; name it .parquet, .csv or "
                       ".arrow, or give --format", BAD_INPUT)
    return fmt


def read_frame(path: str, fmt: str | None, index_column: str | None) -> pd.DataFrame:
    """A Parquet, CSV or Arrow IPC file as a DataFrame, indexed by ``index_column`` when given
    (a CSV index column of ISO dates becomes a DatetimeIndex)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    fmt = file_format(path, fmt, "input file")
    if not os.path.isfile(path):
        raise CliError(f"input file {path!r} does not exist (nothing was written)", FILE_ERROR)
    try:
        if fmt == "parquet":
            df = pq.read_table(path).to_pandas()
        elif fmt == "csv":
            df = pd.read_csv(path)
        else:
            with pa.memory_map(path) as src:
                try:
                    table = pa.ipc.open_file(src).read_all()
                except pa.ArrowInvalid:
                    src.seek(0)
                    table = pa.ipc.open_stream(src).read_all()
            df = table.to_pandas()
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise CliError(f"input file {path!r} is not readable as {fmt}: {exc} (nothing was written)",
                       FILE_ERROR) from None
    if index_column is not None:
        if index_column not in df.columns:
            raise CliError(f"--index-column {index_column!r} is not a column of {path!r} (columns: "
                           f"{', '.join(map(str, df.columns))})", BAD_INPUT)
        if df[index_column].dtype == object:
            try:
                df[index_column] = pd.to_datetime(df[index_column], format="ISO8601")
            except (ValueError, TypeError):
                pass  # not dates: a plain index
        df = df.set_index(index_column)
    return df


def write_frame(df: pd.DataFrame, path: str, fmt: str | None) -> None:
    """Write ``df`` (index included) to a Parquet, CSV or Arrow IPC file; a failed write leaves
    no file behind (written beside it, then renamed)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    fmt = file_format(path, fmt, "--to")
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        if fmt == "csv":
            df.to_csv(tmp)
        else:
            table = pa.Table.from_pandas(df, preserve_index=not isinstance(df.index, pd.RangeIndex))
            if fmt == "parquet":
                pq.write_table(table, tmp)
            else:
                with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
                    w.write_table(table)
        os.replace(tmp, path)
    except (OSError, pa.ArrowException) as exc:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise CliError(f"cannot write {path!r}: {exc}", FILE_ERROR) from None


# -- output ---------------------------------------------------------------------------------------
def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame as JSON-ready records (times as ISO strings, NaN as null)."""
    out: list[dict[str, Any]] = json.loads(df.to_json(orient="records", date_format="iso", date_unit="ns",
                                                      default_handler=str))
    return out


def emit_json(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str))


def emit_table(df: pd.DataFrame, *, index: bool = False) -> None:
    if df.empty and len(df.columns) == 0:
        return
    print(df.to_string(index=index))


def error(message: str) -> None:
    print(f"arcticlite: {message}", file=sys.stderr)

