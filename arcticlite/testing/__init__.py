"""Test kit for stores and for code built on them (import it from your own tests).

* :class:`StoreConformance`: the test suite every :class:`~arcticlite.storage.KVStore` passes;
  subclass it and provide a ``store`` fixture.
* :class:`KVStoreStateMachine` / :func:`run_state_machine`: a Hypothesis state machine that
  checks a store against a dict model.
* :func:`race_threads` / :func:`race_processes`: racing ``write_if_absent`` writers.
* :class:`CrashingStore` / :class:`SimulatedCrash`: a wrapper that dies at its Nth call (every
  step boundary of an operation, deterministically).
* :class:`UnconditionalStore`: a wrapper with every conditional write switched off (last
  writer wins), the control of the concurrency battery.
* :class:`S3TestServer` (in :mod:`arcticlite.testing.s3server`): moto on 127.0.0.1, one
  request at a time (exact conditional writes), with fault injection.

Needs pytest and hypothesis (the ``test`` extra).
"""

from arcticlite.testing._crash import CrashingStore, SimulatedCrash
from arcticlite.testing._unconditional import UnconditionalStore
from arcticlite.testing.s3server import S3TestServer
from arcticlite.testing.stateful import KVStoreStateMachine, run_state_machine
from arcticlite.testing.store import (
    StoreConformance,
    process_context,
    race_processes,
    race_threads,
)

__all__ = [
    "CrashingStore",
    "KVStoreStateMachine",
    "S3TestServer",
    "SimulatedCrash",
    "StoreConformance",
    "UnconditionalStore",
    "process_context",
    "race_processes",
    "race_threads",
    "run_state_machine",
]
