"""Whether a solve's arrays fit in the memory this process may still take, asked before they
are allocated.

Why: a solve that outgrows the memory is ended by the kernel's OOM killer (no message; the
scheduled run shows "Crashed") or fails half-way with numpy's ``MemoryError`` and a
traceback, after its minutes of work. Its size is known at the door: harmonic's arrays are
blocks of a score per node and class (``harmonic``'s module docstring, "The block CG's
memory"), so 100,000 nodes of 1,000 classes need about 3 GiB and 1,000,000 nodes about 30.

What counts as available (``available_bytes``), the least of:

- the memory the machine can give without swapping (``MemAvailable``: read from
  ``/proc/meminfo`` on Linux, psutil elsewhere);
- a cgroup's limit less its use (cgroup v2 ``memory.max`` − ``memory.current``: a
  container's limit, which ``MemAvailable`` does not show);
- the address-space limit (``ulimit -v``, ``RLIMIT_AS``) less this process's virtual size.

None when none of them can be read; then nothing is checked.

Why Linux's files and not psutil there: psutil reads the same two files, but importing it
took 7-27 ms at the door of the solve that first asks (a fresh process; the 100k-node solve
of ``bench/harmonic_paired.py`` takes 0.24 s), and reading ``/proc/meminfo`` takes 0.1 ms.

The check counts the solve's own arrays (its caller says how many bytes), not the allocator's
reservations: under ``ulimit -v`` each thread's malloc arena reserves up to 64 MiB of address
space, so a solve close to that limit can still fail with numpy's ``MemoryError`` (measured,
tests/test_solver_memory.py's problem: harmonic asked for 0.31 GiB, solved with 0.49 GiB of
address space to spare, failed on its way with 0.39, and was refused at the door with 0.15).
The embedded store takes its share of that address space when it opens (half of what is left,
keeping 3 GiB for the run: graphstore/address_space.py), so a solve sees what the store left.
"""

from __future__ import annotations

import resource
from pathlib import Path

__all__ = ["SolverOutOfMemory", "available_bytes", "check_blocks", "check_memory"]

#: Below this many bytes a solve is not checked (reading the limits costs more than it saves).
CHECK_FROM_BYTES = 64 * 2**20
CGROUP = Path("/sys/fs/cgroup")
MEMINFO = Path("/proc/meminfo")
STATM = Path("/proc/self/statm")


class SolverOutOfMemory(MemoryError):
    """A solve would need more memory than this process may take; raised before it allocates.

    Attributes: ``method``, ``what`` (the arrays, in words), ``need`` and ``available`` (bytes)."""

    def __init__(self, method: str, what: str, need: int, available: int):
        self.method, self.what, self.need, self.available = method, what, need, available
        super().__init__(f"{method} needs about {need / 2**30:.3g} GiB for {what}, and this process may take "
                         f"{available / 2**30:.3g} GiB more (the machine's available memory, its container's "
                         "limit or ulimit -v): run it where it has more memory, or with fewer classes.")

    def __reduce__(self):  # Dask and Prefect send it between processes: rebuilt from its fields
        return type(self), (self.method, self.what, self.need, self.available)


def _cgroup_headroom() -> int | None:
    try:
        limit = (CGROUP / "memory.max").read_text().strip()
        used = int((CGROUP / "memory.current").read_text())
    except (OSError, ValueError):
        return None
    return None if limit == "max" else max(0, int(limit) - used)


def _address_space_headroom() -> int | None:
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    return max(0, soft - _virtual_size())


def _virtual_size() -> int:
    """This process's virtual size: ``/proc/self/statm``'s first field (pages), psutil elsewhere."""
    try:
        return int(STATM.read_text().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        import psutil

        return psutil.Process().memory_info().vms


def _machine_available() -> int:
    """``MemAvailable`` of ``/proc/meminfo`` (Linux 3.14+), psutil's estimate elsewhere."""
    try:
        with MEMINFO.open("rb") as meminfo:
            for line in meminfo:  # a loop over some 50 lines
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024  # in kB
    except (OSError, ValueError, IndexError):
        pass
    import psutil

    return psutil.virtual_memory().available


def available_bytes() -> int | None:
    """The least of the machine's available memory, the cgroup's headroom and the address
    space's headroom (module docstring); None when none is known."""
    known = [_machine_available(), _cgroup_headroom(), _address_space_headroom()]
    return min((k for k in known if k is not None), default=None)


def check_memory(method: str, need: int, what: str) -> None:
    """Raise ``SolverOutOfMemory`` when ``need`` bytes exceed ``available_bytes()``."""
    if need < CHECK_FROM_BYTES:
        return
    available = available_bytes()
    if available is not None and need > available:
        raise SolverOutOfMemory(method, what, int(need), int(available))


def check_blocks(method: str, n: int, classes: int, blocks: int, edges: int, graph_copies: int, per: str,
                 more: int = 0, more_what: str = "") -> None:
    """``check_memory`` for a solve whose peak is ``blocks`` n × C float32 arrays (``per`` node
    and class: "a score", "a marginal") and ``graph_copies`` copies of a graph of ``edges``
    stored entries (12 bytes each: a weight and a column index), and ``more`` bytes of
    ``more_what`` ("libsvm's kernel cache")."""
    check_memory(method, blocks * n * classes * 4 + graph_copies * edges * 12 + more,
                 f"{n:,} nodes of {classes:,} classes ({blocks} blocks of {per} per node and class, "
                 f"{graph_copies} copies of the graph{', ' + more_what if more else ''})")
