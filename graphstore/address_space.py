"""What the embedded store reserves under an address-space limit (``ulimit -v``, RLIMIT_AS),
as a batch system or a container may set one.

The engine reserves address space for its pool and for a region its database's pages map
into, 8 TiB unless told (``max_db_size``). Under a limit that reservation alone failed:
``graphlabel demo`` under ``ulimit -v 3000000`` ended in a traceback ("Buffer manager
exception: Mmap for size 8796093022208 failed"). So under a limit a store reserves within
what the process has left (``address_room``, once, before it first opens), and within that
a region for its file and its growth (``AddressRoom.bounds``, at every open); without a
limit it keeps the engine's own region. The rest of the address space is the run's: a
solve checks what is left before it allocates (solvers/_memory.py).
"""

from __future__ import annotations

import resource
from dataclasses import dataclass
from pathlib import Path

from .errors import StoreOutOfMemory

#: The share of the address space left under a limit that a store may reserve.
ADDRESS_SHARE = 0.5
#: ... and the address space it leaves to the rest of the run, at least. Why: the engine
#: crashes the process (a segmentation fault in ``get_as_arrow``) when its own allocations
#: outside the pool fail, and the run's libraries reserve far more address space than they
#: use once loaded after the store opens (scikit-learn's neighbours 0.56 GiB, faiss 0.45,
#: pyamg 0.27, each loaded alone): labelling 100,000 nodes of 32 features grew the process
#: by 2.8 GiB beside the store (0.4 GiB resident) and crashed in the export under ``ulimit
#: -v 4000000`` with 1 GiB kept for it (ladybug 0.22).
RUN_ADDRESS_BYTES = 3 << 30
#: The least pool and pages' region a store opens with under a limit.
SMALLEST_POOL_BYTES = 64 << 20
#: The pages' region, as a multiple of the database file, and at least (``AddressRoom.bounds``).
#: Why not all the room: a region reserves address space it does not use, which the run
#: then lacks; 100,000 nodes of 32 features labelled under ``ulimit -v 4000000`` ran out of
#: address space in the kNN search beside a region of 1 GiB for a file of 81 MB. Why this
#: much: a file past its region stops the store ("Maximum database size of … bytes has
#: been reached"), and a full run grew that file from 30 MB to 81 MB; the region grows at
#: the store's next reopen (``KuzuStore._fit_pool``).
REGION_GROWTH = 8
SMALLEST_REGION_BYTES = 256 << 20


def _power_of_two_at_most(size: int) -> int:
    return 1 << (max(1, size).bit_length() - 1)


def _power_of_two_at_least(size: int) -> int:
    return 1 << (max(1, size) - 1).bit_length()


def _file_bytes(path: Path) -> int:
    return path.stat().st_size if path.is_file() else 0


@dataclass(frozen=True)
class AddressRoom:
    """The most a store reserves under an address-space limit: a pool of ``pool`` bytes
    and a pages' region of ``pages`` bytes (a power of two: the engine refuses any other,
    "The given max db size should be a power of 2")."""

    pool: int
    pages: int

    def bounds(self, path: Path, pool_bytes: int) -> dict[str, int]:
        """The engine's options for the database file ``path`` opened with a pool of
        ``pool_bytes``: within the room, the region ``REGION_GROWTH`` times the file (at
        least ``SMALLEST_REGION_BYTES``). Raises ``StoreOutOfMemory`` once the file has
        outgrown the room."""
        stored = _file_bytes(path)
        region = min(self.pages, _power_of_two_at_least(max(REGION_GROWTH * stored, SMALLEST_REGION_BYTES)))
        if region < stored:
            raise StoreOutOfMemory(
                f"the store {path.parent}'s database file ({stored / 2**30:.2f} GiB) has outgrown the"
                f" {self.pages / 2**30:.2f} GiB the address-space limit (ulimit -v) lets it reserve: raise the"
                " limit, or lift it (ulimit -v unlimited)")
        return {"buffer_pool_size": min(pool_bytes, self.pool), "max_db_size": region}


def address_room(path: Path) -> AddressRoom | None:
    """What the store at ``path`` (its database file) may reserve: None when the address
    space has no limit; else within ``ADDRESS_SHARE`` of what this process has left, and
    leaving ``RUN_ADDRESS_BYTES``, half for the pool and the rest for the pages' region.
    Raises ``StoreOutOfMemory`` when that is too little for the file (or, for a new store,
    for ``SMALLEST_POOL_BYTES`` each)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    import psutil

    # the headroom the solvers' check reads too (solvers/_memory.py: the solvers import
    # nothing of the project, so the few lines are in both)
    headroom = max(0, soft - psutil.Process().memory_info().vms)
    budget = int(min(ADDRESS_SHARE * headroom, headroom - RUN_ADDRESS_BYTES))
    room = AddressRoom(pool=budget // 2, pages=_power_of_two_at_most(budget - budget // 2))
    stored = _file_bytes(path)
    if room.pool < SMALLEST_POOL_BYTES or room.pages < max(stored, SMALLEST_POOL_BYTES):
        least = _power_of_two_at_least(max(stored, SMALLEST_POOL_BYTES))
        needed = max(RUN_ADDRESS_BYTES + 2 * least, 4 * least)  # a pool and a region of the file's power of two
        raise StoreOutOfMemory(
            f"the address-space limit (ulimit -v) leaves this process {headroom / 2**30:.2f} GiB, where the"
            f" store {path.parent} needs {needed / 2**30:.2f} GiB (its page cache and pages, its database file"
            f" being {stored / 2**30:.2f} GiB, and {RUN_ADDRESS_BYTES / 2**30:.0f} GiB for the rest of the run):"
            " raise the limit, or lift it (ulimit -v unlimited)")
    return room


def database_bounds(room: AddressRoom | None, path: Path, pool_bytes: int) -> dict[str, int]:
    """The engine's options for the database file ``path``: a pool of ``pool_bytes`` and
    the engine's own region without a limit (``room`` None), else within ``room``."""
    return {"buffer_pool_size": pool_bytes} if room is None else room.bounds(path, pool_bytes)
