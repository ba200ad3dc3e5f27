"""Coverage-guided fuzz targets for arcticlite's decoders (atheris / libFuzzer).

Each target takes arbitrary bytes and must either decode them or raise arcticlite's
``CorruptDataError``: any other exception, a crash, a hang (``-timeout``) or runaway memory
(``-rss_limit_mb``) is a finding. Targets:

``fermion``
    The Fermion reader (data segments): ``decode`` whole, by columns, by row range, with a
    filter, and the batch reader.
``record``
    Version records and refs (the checksummed envelope and the record parser).

Run::

    python tests/format/fuzz_decoders.py fermion -runs=100000 -timeout=10 -rss_limit_mb=2048

The seed corpus is built in memory from valid values, so libFuzzer starts from real layouts.
``tests/format/test_fuzz.py`` runs each target for a bounded number of executions.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import atheris

with atheris.instrument_imports(include=["arcticlite"]):
    import pyarrow as pa

    from arcticlite.exceptions import CorruptDataError, UserInputException
    from arcticlite.format import FermionReader, FermionWriter, decode, encode
    from arcticlite.version import VersionRecord
    from arcticlite.version._records import parse_ref


def _table() -> pa.Table:
    return pa.table({
        "i": pa.array([1, None, 3, 4, 5, 6], pa.int64()),
        "f": [1.5, float("nan"), -0.0, 2.0, None, 3.0],
        "s": ["a", None, "ccc", "", "é", "zz"],
        "l": pa.array([[1, 2], None, [], [3], [4, 5, 6], None], pa.list_(pa.int32())),
        "d": pa.array(["u", "v", "u", None, "v", "u"]).dictionary_encode(),
    })


def _fermion_seeds() -> list[bytes]:
    t = _table()
    w = FermionWriter(page_size=64)
    w.append_batch(t.slice(0, 2), batch_id=7)
    w.append_batch(t.slice(2), batch_id=9)
    batched = w.close()
    assert batched is not None
    return [encode(t), batched, encode(t.slice(0, 1))]


def _record_seeds() -> list[bytes]:
    rec = VersionRecord(symbol="s", seq=3, kind="write", created_ns=1, token="t", dead=((0, 1),), latest_live=3)
    return [rec.to_bytes()]


def fermion(data: bytes) -> None:
    for kwargs in ({}, {"columns": ["s", "l"]}, {"row_range": (1, 4)}, {"filter": [("i", ">", 2)]}):
        try:
            decode(data, **kwargs)
        except CorruptDataError:
            pass
    try:
        r = FermionReader(data)
        r.read(with_batch_ids=True)
    except (CorruptDataError, UserInputException):  # ... or "not written in batch mode"
        pass


def record(data: bytes) -> None:
    for parse in (VersionRecord.from_bytes, parse_ref):
        try:
            parse(data)
        except CorruptDataError:
            pass


TARGETS: dict[str, tuple[Callable[[bytes], None], Callable[[], list[bytes]]]] = {
    "fermion": (fermion, _fermion_seeds),
    "record": (record, _record_seeds),
}


def main(argv: list[str]) -> None:
    name = argv[1]
    target, seeds = TARGETS[name]
    corpus = seeds()
    for seed in corpus:  # the seeds themselves must decode
        target(seed)

    def one(data: bytes) -> None:
        # half the inputs: a seed with the fuzzer's bytes spliced in, so mutations start from
        # real layouts even without a corpus directory
        if data and data[0] & 1:
            seed = corpus[data[0] % len(corpus)]
            at = int.from_bytes(data[1:3] or b"\0", "little") % (len(seed) + 1)
            data = seed[:at] + data[3:] + seed[at + len(data[3:]) :]
        target(data)

    atheris.Setup([argv[0], *argv[2:]], one)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
