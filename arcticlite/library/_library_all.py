"""The public ``Library`` class: the core operations plus the mixins."""

from __future__ import annotations

from arcticlite.library._library_admin import AdminMixin
from arcticlite.library._library_batch import BatchMixin
from arcticlite.library._library_gc import GcMixin
from arcticlite.library._library_inspect import InspectMixin
from arcticlite.library._library_maint import MaintenanceMixin
from arcticlite.library._library_stage import StageMixin
from arcticlite.library._library_update import UpdateMixin


class Library(UpdateMixin, BatchMixin, StageMixin, MaintenanceMixin, GcMixin, InspectMixin, AdminMixin):
    """A library of symbols, each a chain of immutable versions (ArcticDB's ``Library``).

    Obtain one from :meth:`Arctic.get_library` / :meth:`Arctic.create_library`. Every
    method is safe to call from many threads and processes at once, on every backend:
    writes commit with create-if-absent of the next version key, and appends and updates
    rebase on a concurrent commit instead of losing it.
    """

    _output_format = None
