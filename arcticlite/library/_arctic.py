"""``Arctic``: the entry point -- a connection to one store holding many libraries."""

from __future__ import annotations

import dataclasses
import uuid
import weakref
from typing import Any

import numpy as np

from arcticlite._envelope import KIND_CONFIG, KIND_REGISTRY, naming_key, seal, unseal
from arcticlite.exceptions import (
    ArcticException,
    ArcticInvalidApiUsageException,
    CorruptDataError,
    LibraryNotFound,
    MismatchingLibraryOptions,
    PermissionException,
    UnsupportedLibraryOptionValue,
    UserInputException,
)
from arcticlite.library._library import Library
from arcticlite.library._options import (
    EncodingVersion,
    EnterpriseLibraryOptions,
    LibraryOptions,
    ModifiableEnterpriseLibraryOption,
    ModifiableLibraryOption,
)
from arcticlite.library._types import string_format_name
from arcticlite.storage import KVStore, redact
from arcticlite.table import VerifyReport
from arcticlite.version import (
    DELETING_PREFIX,
    REGISTRY_PREFIX,
    LibraryKeys,
    deleting_key,
    escape,
    registry_key,
    unescape,
)

MAX_LIBRARY_NAME = 255


#: Connections of this process that were pickled, by token: unpickling here reuses them.
_LIVE: weakref.WeakValueDictionary[str, Arctic] = weakref.WeakValueDictionary()


def _reconnect(uri: str, token: str, output_format: Any, string_format: Any, read_only: bool = False,
               allow_pickle: bool = True) -> Arctic:
    ac = _LIVE.get(token)
    if ac is None:
        ac = Arctic(uri, output_format=output_format, arrow_string_format_default=string_format,
                    read_only=read_only, allow_pickle=allow_pickle)
    return ac


_ARCTICDB_CONFIG = "_arctic_cfg/cref/"
"""Where ArcticDB keeps its library configurations, at the root of a bucket (or path prefix)."""


def _arcticdb_refusal(where: str, uri: str) -> UserInputException:
    return UserInputException(
        f"{where} holds a store written by ArcticDB, whose format arcticlite does not read. "
        "Copy it into an arcticlite store through an installed arcticdb: "
        f"arcticlite import-arcticdb {uri} <new arcticlite URI> "
        "(or arcticlite.migrate.import_arcticdb); see docs/compatibility.md"
    )


def _refuse_arcticdb_bucket(store: KVStore, uri: str) -> None:
    """An S3 bucket (or path prefix) where ArcticDB wrote its libraries and arcticlite has none
    would look empty: refuse it the same way (one listing; opening still only reads)."""
    if next(iter(store.list_keys(_ARCTICDB_CONFIG)), None) is None:
        return
    if next(iter(store.list_keys(REGISTRY_PREFIX)), None) is not None:
        return  # an arcticlite store that also holds ArcticDB's configuration: arcticlite's to open
    raise _arcticdb_refusal("this bucket", redact(uri))


def _refuse_arcticdb_store(uri: Any) -> None:
    """A folder ArcticDB wrote (one LMDB environment per library, and ``_arctic_cfg``) would
    look empty to arcticlite: say what it is and how to move it instead."""
    import os

    from arcticlite.storage import LmdbUri, parse_uri

    parsed = parse_uri(uri) if isinstance(uri, str) else None
    if isinstance(parsed, LmdbUri) and os.path.isfile(os.path.join(parsed.path, "_arctic_cfg", "data.mdb")) \
            and not os.path.exists(os.path.join(parsed.path, "data.mdb")):
        raise _arcticdb_refusal(repr(parsed.path), str(uri))


#: Escaped library names whose key prefix the store's own records use.
RESERVED_LIBRARY_NAMES = frozenset({REGISTRY_PREFIX.split("/", 1)[0], "_arcticlite_probe"})


def _check_library_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise UserInputException("library name must be a non-empty string")
    if len(name) > MAX_LIBRARY_NAME:
        raise UserInputException(f"library name is {len(name)} characters; the limit is {MAX_LIBRARY_NAME}")
    if any(c in name for c in "*<>") or not name.isprintable():
        raise UserInputException(f"library name {name!r} contains a character that is not allowed (* < > or control)")
    if escape(name) in RESERVED_LIBRARY_NAMES:
        # its keys would share the prefix of the store's own records (deleting it would delete
        # the registry of every library)
        raise UserInputException(f"library name {name!r} is reserved for the store's own records; choose another")
    return name


class Arctic:
    """A connection to a store of libraries.

    Parameters
    ----------
    uri : str
        ``lmdb://path[?map_size=2GB]``, ``mem://``, ``s3://endpoint:bucket[?port=…&path_prefix=…&region=…]``
        or ``s3s://…`` (HTTPS). S3 credentials come from boto3's default chain, never the URI.
    encoding_version : EncodingVersion
        Accepted for ArcticDB compatibility and reported by ``Library.options()``;
        arcticlite always writes Fermion segments.
    output_format : str, optional
        Default output format of reads: ``"pandas"`` (default), ``"pyarrow"`` or ``"polars"``.
    arrow_string_format_default : ArrowOutputStringFormat, optional
        Default Arrow type of string columns in Arrow / polars output.
    read_only : bool
        Refuse every change (writes, deletes, snapshots, staging, compaction, ``gc``, library
        creation and deletion, option changes) with ``PermissionException`` naming the
        operation, before anything is written. ``lmdb://`` stores are opened read-only, so a
        directory this process cannot write, or a read-only file system, can be read; the store
        must exist. Not in ArcticDB (arcticlite's addition; the default is ArcticDB's).
    allow_pickle : bool
        ``False``: never run ``pickle`` on stored bytes someone else may have written. Reads
        of ``write_pickle`` data and of metadata or snapshot metadata that is not plain values
        (dict, list, tuple, set, str, bytes, numbers, bool, None, datetime) raise
        ``UnpicklingRefusedError``; plain values are decoded by a loader that cannot import or
        call anything. The default ``True`` is ArcticDB's behaviour. See docs/reliability.md.
    store : KVStore, optional
        arcticlite only: an open store to use instead of opening ``uri`` (a store wrapped
        for fault injection or logging, or an S3 store with an injected client).

    Raises
    ------
    StorageUriError
        The URI's scheme is unknown or it is malformed.
    LmdbOptionsError
        An ``lmdb://`` URI names an unknown option.
    StorageException
        ``read_only`` and the store does not exist (it is never created).

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb, tempfile
    >>> ac = adb.Arctic("lmdb://" + tempfile.mkdtemp())
    >>> lib = ac.get_library("demo", create_if_missing=True)
    >>> _ = lib.write("S", pd.DataFrame({"px": [1.0]}))
    >>> ac.list_libraries()
    ['demo']
    >>> adb.Arctic(ac.get_uri(), read_only=True)["demo"].read("S").data["px"].tolist()
    [1.0]
    """

    def __init__(self, uri: str, encoding_version: EncodingVersion = EncodingVersion.V1,
                 output_format: Any = None, arrow_string_format_default: Any = None,
                 *, read_only: bool = False, allow_pickle: bool = True, store: KVStore | None = None) -> None:
        from arcticlite.storage import open_store

        self._uri = uri
        self._read_only = bool(read_only)
        self._allow_pickle = bool(allow_pickle)
        if store is None:
            _refuse_arcticdb_store(uri)
        self._store = store if store is not None else open_store(uri, read_only=self._read_only)
        if store is None and isinstance(uri, str) and uri.startswith("s3"):
            _refuse_arcticdb_bucket(self._store, uri)
        self._output_format = output_format
        self._string_format = string_format_name(arrow_string_format_default)
        self._token = uuid.uuid4().hex
        self._encoding_version = encoding_version
        self._libs: dict[str, Library] = {}
        # an endpoint that ignores If-None-Match cannot serve the commit protocol (DESIGN §2);
        # probed (a write) at the first commit, not here: opening a store only reads
        self._conditional: bool | None = True if self._store.atomic_commit else None

    def __repr__(self) -> str:
        return f"Arctic(config={self._store!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles as its URI and options: unpickled in this process it is this connection
        again (a ``mem://`` store included), elsewhere a new connection to the same store."""
        if self._token not in _LIVE:
            _LIVE[self._token] = self
        return (_reconnect, (self._uri, self._token, self._output_format, self._string_format,
                             self._read_only, self._allow_pickle))

    def _refuse_write(self, op: str) -> None:
        if self._read_only:
            raise PermissionException(
                f"{op} refused: this Arctic connection was opened with read_only=True, so nothing in the "
                "store can change; open it without read_only to write")

    def _library_for_pickle(self, name: str, output_format: Any, string_format: Any, read_only: bool = False,
                            allow_pickle: bool = True) -> Library:
        lib = self.get_library(name, read_only=read_only or None, allow_pickle=None if allow_pickle else False)
        lib._output_format = output_format
        lib._string_format = string_format
        return lib

    def _conditional_writes_ok(self) -> bool:
        if self._conditional is None:
            self._conditional = self._store.probe_conditional_writes()
        return self._conditional

    def get_uri(self) -> str:
        """The URI this connection was made with (S3 credentials given in it masked).

        Returns
        -------
        str
            The URI, safe to log.

        Examples
        --------
        >>> import arcticlite as adb
        >>> adb.Arctic("mem://").get_uri()
        'mem://'
        """
        from arcticlite.storage import redact

        return redact(self._uri)

    # -- libraries -----------------------------------------------------------------------------------
    def _load_options(self, name: str) -> LibraryOptions | None:
        header = self._load_config(name)
        return None if header is None else LibraryOptions.from_json(header["options"])

    def _load_config(self, name: str) -> dict[str, Any] | None:
        """The library's stored config: ``options`` (LibraryOptions as JSON), ``name`` and, when
        given, ``enterprise`` (EnterpriseLibraryOptions' fields)."""
        key = LibraryKeys(name).config
        raw = self._store.read_if_exists(key)
        if raw is None:
            return None
        with naming_key(key):
            header, _ = unseal(raw, KIND_CONFIG)
        return dict(header)

    def _enterprise_options(self, name: str) -> EnterpriseLibraryOptions:
        header = self._load_config(name) or {}
        given = header.get("enterprise") or {}
        return EnterpriseLibraryOptions(replication=bool(given.get("replication", False)),
                                        background_deletion=bool(given.get("background_deletion", False)))

    def _open(self, name: str, options: LibraryOptions, output_format: Any = None,
              arrow_string_format_default: Any = None, read_only: bool | None = None,
              allow_pickle: bool | None = None, registry: bytes | None = None) -> Library:
        if options.encoding_version is None:  # the effective encoding is reported, as ArcticDB does
            options = dataclasses.replace(options, encoding_version=self._encoding_version)
        # a library may only be stricter than its connection
        if read_only is False and self._read_only:
            raise ArcticInvalidApiUsageException(
                f"library {name!r} cannot be opened with read_only=False: the Arctic connection is read-only")
        if allow_pickle is True and not self._allow_pickle:
            raise ArcticInvalidApiUsageException(
                f"library {name!r} cannot be opened with allow_pickle=True: the Arctic connection has allow_pickle=False")
        lib = Library(self._store, name, options, arctic=self, read_only=self._read_only or bool(read_only),
                      allow_pickle=self._allow_pickle and allow_pickle is not False)
        lib._engine.conditional_ok = self._conditional_writes_ok
        # its commits check that the registry entry is still this one (not deleted, or created again)
        raw = self._store.read_if_exists(registry_key(name)) if registry is None else registry
        lib._registry = None if raw is None else bytes(raw)
        if output_format is not None:
            lib._output_format = output_format
        lib._string_format = string_format_name(arrow_string_format_default)
        return lib

    def create_library(self, name: str, library_options: LibraryOptions | None = None,
                       enterprise_library_options: EnterpriseLibraryOptions | None = None,
                       output_format: Any = None, arrow_string_format_default: Any = None) -> Library:
        """Create a library.

        Parameters
        ----------
        name : str
            The library's name (any non-empty string).
        library_options : LibraryOptions, optional
            Its options (``rows_per_segment``, ``columns_per_segment``, ``dynamic_schema``, …),
            fixed from now on.
        enterprise_library_options : EnterpriseLibraryOptions, optional
            Accepted for ArcticDB compatibility.
        output_format, arrow_string_format_default : optional
            The library's default output of reads (as :meth:`Library.read`'s arguments).

        Returns
        -------
        Library

        Raises
        ------
        ValueError
            A library of that name exists.
        PermissionException
            The store was opened read-only.

        Examples
        --------
        >>> import arcticlite as adb
        >>> ac = adb.Arctic("mem://")
        >>> lib = ac.create_library("prices", adb.LibraryOptions(dynamic_schema=True))
        >>> lib.options().dynamic_schema, ac.list_libraries()
        (True, ['prices'])
        """
        name = _check_library_name(name)
        self._refuse_write("create_library")
        options = dataclasses.replace(library_options) if library_options is not None else LibraryOptions()
        options.validate()  # a caller may have set attributes since construction
        keys = LibraryKeys(name)
        if self._store.exists(deleting_key(name)):
            self._finish_delete(name)  # a deletion that stopped half-way: its keys must not come back
        # the first creator's options stand (a lost answer is settled by reading them back below)
        config: dict[str, Any] = {"options": options.to_json(), "name": name}
        if enterprise_library_options is not None:
            config["enterprise"] = dataclasses.asdict(enterprise_library_options)
        self._store.create_unique(keys.config, seal(KIND_CONFIG, config))
        token = uuid.uuid4().hex
        entry = seal(KIND_REGISTRY, {"name": name, "token": token})
        if not self._store.create_unique(registry_key(name), entry):
            raise ValueError(f"Library [{name}] already exists.")
        stored = self._load_options(name) or options
        return self._open(name, stored, output_format, arrow_string_format_default, registry=bytes(entry))

    def get_library(self, name: str, create_if_missing: bool = False,
                    library_options: LibraryOptions | None = None, output_format: Any = None,
                    arrow_string_format_default: Any = None, *, read_only: bool | None = None,
                    allow_pickle: bool | None = None) -> Library:
        """Open a library (creating it when ``create_if_missing``).

        Parameters
        ----------
        name : str
            The library's name.
        create_if_missing : bool
            Create it (with ``library_options``) when it does not exist.
        library_options : LibraryOptions, optional
            Options of a library this call creates; given for an existing library, they must
            equal its options.
        output_format, arrow_string_format_default : optional
            Default output of reads, as for :meth:`create_library`.
        read_only : bool, optional
            Refuse every change through this library (``PermissionException``).
        allow_pickle : bool, optional
            False: stored pickles load only when they are plain values.

        Returns
        -------
        Library

        Raises
        ------
        LibraryNotFound
            No such library and ``create_if_missing`` is False.
        ArcticInvalidApiUsageException
            ``library_options`` without ``create_if_missing``.
        MismatchingLibraryOptions
            The library exists with other options.

        Examples
        --------
        >>> import arcticlite as adb
        >>> ac = adb.Arctic("mem://")
        >>> ac.get_library("prices", create_if_missing=True).name
        'prices'
        >>> ac["prices"].read_only
        False
        """
        try:
            name = _check_library_name(name)
        except UserInputException:
            if create_if_missing or not isinstance(name, str) or not name:
                raise
            # a name no library may have is simply not found, as ArcticDB reports it
            raise LibraryNotFound(f"Library [{name}] does not exist; create it with create_library()") from None
        if library_options is not None and not create_if_missing:
            raise ArcticInvalidApiUsageException(
                "library_options are only used when creating a library: pass create_if_missing=True"
            )
        created = False
        registry = self._store.read_if_exists(registry_key(name))  # as has_library; the handle keeps it
        if registry is None:
            if not create_if_missing:
                self._refuse_lost_registry(name)
                raise LibraryNotFound(f"Library [{name}] does not exist; create it with create_library()")
            self._refuse_write("get_library(create_if_missing=True) of a missing library")
            if read_only:
                raise PermissionException(f"library {name!r} does not exist and read_only=True cannot create it")
            try:
                self.create_library(name, library_options)
                created = True
            except ValueError:
                pass  # created concurrently
        stored = self._load_options(name) or LibraryOptions()
        if not created and create_if_missing and library_options is not None and \
                dataclasses.replace(library_options, encoding_version=None) != dataclasses.replace(stored, encoding_version=None):
            raise MismatchingLibraryOptions(
                f"Library [{name}] exists with options {stored!r}, not {library_options!r}"
            )
        return self._open(name, stored, output_format, arrow_string_format_default, read_only, allow_pickle,
                          registry=None if registry is None else bytes(registry))

    def __getitem__(self, name: str) -> Library:
        return self.get_library(name)

    def __contains__(self, name: str) -> bool:
        return self.has_library(name)

    def has_library(self, name: str) -> bool:
        """Whether the library ``name`` exists.

        Parameters
        ----------
        name : str
            The library's name.

        Returns
        -------
        bool

        Examples
        --------
        >>> import arcticlite as adb
        >>> ac = adb.Arctic("mem://")
        >>> _ = ac.create_library("prices")
        >>> ac.has_library("prices"), "nope" in ac
        (True, False)
        """
        return self._store.exists(registry_key(name))

    def list_libraries(self) -> list[str]:
        """Names of the libraries, sorted.

        Returns
        -------
        list of str

        Examples
        --------
        >>> import arcticlite as adb
        >>> ac = adb.Arctic("mem://")
        >>> _ = ac.create_library("b"); _ = ac.create_library("a")
        >>> ac.list_libraries()
        ['a', 'b']
        """
        return sorted(unescape(k[len(REGISTRY_PREFIX):]) for k in self._store.list_keys(REGISTRY_PREFIX))

    def verify(self, data: bool = True) -> VerifyReport:
        """Check the whole store for damage, changing nothing: every library as
        :meth:`Library.verify` checks it, every registry entry, no key outside the libraries
        and the store's own records, and (LMDB) the B-tree's own key count against a listing
        (a damaged page can hide keys from lookups and listings alike).

        Parameters
        ----------
        data : bool
            Also decode every data segment that is needed (False: only check it is present).

        Returns
        -------
        VerifyReport
            The counts summed over the libraries, and every problem found (a library's
            problems start with its name).

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> ac = adb.Arctic("mem://")
        >>> _ = ac.create_library("demo").write("S", pd.DataFrame({"px": [1.0]}))
        >>> report = ac.verify()
        >>> report.ok, report.versions, report.segments
        (True, 1, 1)
        """
        problems: list[str] = []
        names: list[str] = []
        keys = list(self._store.list_keys(""))
        roots: set[str] = set()
        for k in keys:
            if not k.startswith(REGISTRY_PREFIX):
                continue
            name = unescape(k[len(REGISTRY_PREFIX):])
            try:
                with naming_key(k):
                    header = unseal(self._store.read(k), KIND_REGISTRY)[0]
                if header.get("name") != name:
                    raise CorruptDataError(f"registry entry {k!r} is that of library {header.get('name')!r}: "
                                           "the key is corrupt")
            except ArcticException as exc:
                problems.append(f"{k}: {type(exc).__name__}: {exc}")
                continue
            names.append(name)
            roots.add(LibraryKeys(name).root)
        strays: dict[str, list[str]] = {}
        for k in keys:
            if k.startswith(DELETING_PREFIX):
                problems.append(f"the deletion of library {unescape(k[len(DELETING_PREFIX):])!r} stopped half-way "
                                f"({k!r}); delete_library finishes it")
            elif not k.startswith((REGISTRY_PREFIX, _ARCTICDB_CONFIG)) and k.split("/", 1)[0] + "/" not in roots:
                strays.setdefault(k.split("/", 1)[0] + "/", []).append(k)
        for root, ks in strays.items():
            problems.append(f"{len(ks):,} key(s) under {root!r} belong to no library (first: {ks[0]!r}): damaged keys "
                            "(their values are lost to their owners), a library that lost its registry entry, or "
                            "keys someone else wrote")
        counted = self._store.key_count()
        if counted is not None and counted != len(keys):
            problems.append(f"the store's B-tree counts {counted:,} keys but a listing finds {len(keys):,}: pages of "
                            "the LMDB file are damaged (keys are hidden); restore the store from a backup")
        reports = [self.get_library(name).verify(data=data) for name in sorted(names)]
        for name, rep in zip(sorted(names), reports, strict=True):
            problems.extend(f"library {name!r}: {p}" for p in rep.problems)
        return VerifyReport(keys=len(keys), versions=sum(r.versions for r in reports),
                            segments=sum(r.segments for r in reports), bytes=sum(r.bytes for r in reports),
                            unreachable=sum(r.unreachable for r in reports), problems=tuple(problems))

    def delete_library(self, name: str) -> None:
        """Delete a library and all its data (a no-op if it does not exist).

        Parameters
        ----------
        name : str
            The library's name.

        Returns
        -------
        None

        Raises
        ------
        PermissionException
            The store was opened read-only.

        Examples
        --------
        >>> import arcticlite as adb
        >>> ac = adb.Arctic("mem://")
        >>> _ = ac.create_library("tmp")
        >>> ac.delete_library("tmp"); ac.has_library("tmp")
        False
        """
        self._refuse_write("delete_library")
        if not self.has_library(name):
            if self._store.exists(deleting_key(name)):
                self._finish_delete(name)
            return
        # The marker first: a deletion stopped at any later step is told apart from a registry
        # entry lost to corruption (see _refuse_lost_registry), and finished by the next
        # delete_library or create_library of the name.
        self._store.write(deleting_key(name), seal(KIND_REGISTRY, {"name": name, "deleting": True}))
        self._store.delete([registry_key(name)])
        self._finish_delete(name)

    def _finish_delete(self, name: str) -> None:
        """Delete every key of library ``name``, then its deletion marker."""
        batch: list[str] = []
        for k in self._store.list_keys(LibraryKeys(name).root):
            batch.append(k)
            if len(batch) >= 1000:
                self._store.delete(batch)
                batch = []
        if batch:
            self._store.delete(batch)
        self._store.delete([deleting_key(name)])

    def _refuse_lost_registry(self, name: str) -> None:
        """Raise ``CorruptDataError`` when library ``name`` has no registry entry but has its
        config and symbols, and no deletion is under way: its entry was lost (a flipped bit in
        an LMDB key moves the value elsewhere), not deleted; reporting it as missing would hide
        data that is still there."""
        keys = LibraryKeys(name)
        if not self._store.exists(keys.config) or self._store.exists(deleting_key(name)):
            return
        if next(iter(self._store.list_keys(keys.ref_prefix)), None) is None:
            return  # a create_library stopped before its registry entry: nothing written in it
        if self._store.exists(registry_key(name)):
            return  # created since the first look
        raise CorruptDataError(
            f"library {name!r} has its config and symbols but its registry entry "
            f"{registry_key(name)!r} is missing and no deletion is under way: the entry was lost "
            "(corrupt storage); restore the key from a backup, or recreate it with "
            "create_library (the data and options are kept)"
        )

    def modify_library_option(self, library: Library, option: ModifiableLibraryOption, value: Any) -> None:
        """Change a modifiable option of a library (persisted in its config).

        The ``library`` object given sees the change at once; other connections see it when
        they next open the library. Data already written keeps its segment sizes.

        Parameters
        ----------
        library : Library
            A library of this connection.
        option : ModifiableLibraryOption
            ``DEDUP``, ``ROWS_PER_SEGMENT``, ``COLUMNS_PER_SEGMENT``, ``RECURSIVE_NORMALIZERS``
            or ``PRUNE_PREVIOUS_VERSIONS``.
        value : Any
            The new value (validated as ``LibraryOptions`` validates it).

        Raises
        ------
        ArcticInvalidApiUsageException
            ``option`` cannot be modified (enterprise options included).
        PermissionException
            The connection or the library is read-only.

        Examples
        --------
        >>> import arcticlite as adb
        >>> ac = adb.Arctic("mem://")
        >>> lib = ac.create_library("demo")
        >>> ac.modify_library_option(lib, adb.ModifiableLibraryOption.ROWS_PER_SEGMENT, 10)
        >>> lib.options().rows_per_segment, ac["demo"].options().rows_per_segment
        (10, 10)
        """
        if isinstance(option, ModifiableEnterpriseLibraryOption):
            self._modify_enterprise_option(library, option, value)
            return
        field = {
            ModifiableLibraryOption.DEDUP: "dedup",
            ModifiableLibraryOption.ROWS_PER_SEGMENT: "rows_per_segment",
            ModifiableLibraryOption.COLUMNS_PER_SEGMENT: "columns_per_segment",
            ModifiableLibraryOption.RECURSIVE_NORMALIZERS: "recursive_normalizers",
            ModifiableLibraryOption.PRUNE_PREVIOUS_VERSIONS: "prune_previous_versions",
        }.get(option)
        if field is None:
            raise ArcticInvalidApiUsageException(f"option {option!r} cannot be modified")
        self._refuse_modify(library)
        if field in ("dedup", "prune_previous_versions", "recursive_normalizers") \
                and isinstance(value, int | float) and not isinstance(value, bool):
            raise UnsupportedLibraryOptionValue(
                f"{option.name} only supports bool values, got {value!r}")  # ArcticDB's class here
        new = dataclasses.replace(library.options(), **{field: value})
        self._rewrite_config(library, options=new.to_json())
        library._options = new

    def _refuse_modify(self, library: Library) -> None:
        self._refuse_write("modify_library_option")
        if library.read_only:
            library._refuse_write("modify_library_option")

    def _rewrite_config(self, library: Library, **changes: Any) -> None:
        """Store ``library``'s config with ``changes`` (its other fields as stored)."""
        library._check_not_deleted()  # its config must not come back once the library is deleted
        config = self._load_config(library.name) or {"options": library.options().to_json()}
        config.update(changes, name=library.name)
        self._store.write(LibraryKeys(library.name).config, seal(KIND_CONFIG, config))

    def _modify_enterprise_option(self, library: Library, option: ModifiableEnterpriseLibraryOption,
                                  value: Any) -> None:
        """``REPLICATION`` / ``BACKGROUND_DELETION``: kept in the library's config and reported by
        ``Library.enterprise_options()``, as ArcticDB keeps them (arcticlite has neither feature)."""
        if not isinstance(value, bool | np.bool_):
            raise UnsupportedLibraryOptionValue(f"{option.name} only supports bool values, got {value!r}")
        self._refuse_modify(library)
        field = "replication" if option is ModifiableEnterpriseLibraryOption.REPLICATION else "background_deletion"
        kept = dataclasses.asdict(self._enterprise_options(library.name))
        self._rewrite_config(library, enterprise={**kept, field: bool(value)})
