"""What every benchmark prints: the machine, medians of repeated timings, markdown tables,
JSON and PNG copies of the results, and the peak memory of one call."""

from __future__ import annotations

import importlib
import json
import multiprocessing
import os
import platform
import statistics
import sys
import threading
import time
import traceback
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

RESULTS = Path(__file__).parent / "results"

# Distributions whose versions every JSON result records (key: name shown; value: the
# distribution names to try, first installed wins).
_VERSIONED = {
    "numpy": ("numpy",),
    "scipy": ("scipy",),
    "scikit-learn": ("scikit-learn",),
    "faiss": ("faiss-cpu", "faiss-gpu", "faiss"),
    "pyamg": ("pyamg",),
    "PyMaxflow": ("PyMaxflow",),
    "networkx": ("networkx",),
    "kuzu": ("kuzu",),
    "ladybug": ("ladybug",),
    "prefect": ("prefect",),
}


def machine() -> str:
    return (f"{platform.node()} · {platform.machine()} · {os.cpu_count()} cores · "
            f"Python {platform.python_version()} · {platform.platform(terse=True)}")


def versions() -> dict[str, str | None]:
    """Python and the installed versions of the libraries the benchmarks time (None: absent)."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for key, dists in _VERSIONED.items():
        found[key] = None
        for dist in dists:
            try:
                found[key] = metadata.version(dist)
                break
            except metadata.PackageNotFoundError:
                continue
    return found


def median_time(fn, repeat: int = 3) -> tuple[float, object]:
    """Median wall time of ``repeat`` calls and the last call's result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def markdown_table(frame: pd.DataFrame, floatfmt: str = ".3f", index: bool = False) -> str:
    """A GitHub markdown table (pandas' to_markdown needs tabulate, which we do not ship).
    NaN prints as an empty cell; ``index=True`` keeps the index as the first column."""
    if index:
        frame = frame.reset_index().rename(columns={"index": ""})

    def cell(v) -> str:
        if isinstance(v, (float, np.floating)):
            return "" if np.isnan(v) else format(float(v), floatfmt)
        return str(v)

    header = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows])


def _records(frame: pd.DataFrame) -> list[dict]:
    # pandas' own JSON writer turns NaN into null and numpy scalars into JSON numbers.
    return json.loads(frame.to_json(orient="records", double_precision=15, force_ascii=False))


class Report:
    """Collects sections; prints each as it comes and writes them to bench/results/:
    NAME.md (the markdown), NAME.json (machine, date, library versions, every table as
    records under its heading, the notes) and, for each ``figure``, NAME.png."""

    def __init__(self, name: str, title: str) -> None:
        self.name = name
        self.title = title
        self.machine = machine()
        self.parts = [f"# {title}", "", f"machine: {self.machine}", ""]
        self.tables: dict[str, list[dict]] = {}
        self.notes: list[str] = []
        self.figures: list[dict[str, str]] = []
        print("\n".join(self.parts), flush=True)

    def table(self, heading: str, frame: pd.DataFrame, floatfmt: str = ".3f") -> None:
        text = f"## {heading}\n\n{markdown_table(frame, floatfmt)}\n"
        self.parts.append(text)
        self.tables[heading] = _records(frame)
        print(text, flush=True)

    def note(self, text: str) -> None:
        self.parts.append(text + "\n")
        self.notes.append(text)
        print(text, flush=True)

    def figure(self, fig, caption: str) -> Path:
        """Save a matplotlib figure as bench/results/NAME.png (NAME-2.png, ... for later
        ones) with the Agg canvas, whatever backend made it, and link it in the markdown."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        RESULTS.mkdir(exist_ok=True)
        suffix = "" if not self.figures else f"-{len(self.figures) + 1}"
        path = RESULTS / f"{self.name}{suffix}.png"
        FigureCanvasAgg(fig)  # a file, never a window: no display on the bench machines
        fig.savefig(path, dpi=120, bbox_inches="tight")
        pyplot = sys.modules.get("matplotlib.pyplot")
        if pyplot is not None:
            pyplot.close(fig)  # pyplot keeps every figure alive until closed
        self.figures.append({"file": path.name, "caption": caption})
        text = f"![{caption}]({path.name})\n"
        self.parts.append(text)
        print(text, flush=True)
        return path

    def save(self) -> Path:
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / f"{self.name}.md"
        path.write_text("\n".join(self.parts))
        payload = {
            "name": self.name,
            "title": self.title,
            "machine": self.machine,
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "versions": versions(),
            "tables": self.tables,
            "notes": self.notes,
            "figures": self.figures,
        }
        (RESULTS / f"{self.name}.json").write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n")
        return path


# --------------------------------------------------------------------------- peak memory

MIB = 1024 * 1024


def _status_kib(field: str) -> int | None:
    """A ``/proc/self/status`` field in KiB (Linux), None elsewhere."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) of this process; False where unsupported.
    Linux ≥ 4.0: writing 5 to /proc/self/clear_refs sets VmHWM to the current RSS."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        return False
    return _status_kib("VmHWM") is not None


class _RssSampler:
    """Fallback where VmHWM cannot be reset: the largest RSS seen every ``interval`` s."""

    def __init__(self, interval: float = 0.005) -> None:
        import psutil

        self._proc = psutil.Process()
        self.start = self.peak = self._proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(interval,), daemon=True)
        self._thread.start()

    def _run(self, interval: float) -> None:
        while not self._stop.wait(interval):
            self.peak = max(self.peak, self._proc.memory_info().rss)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return max(self.peak, self._proc.memory_info().rss)


def peak_mark() -> _RssSampler | int:
    """The start of a measured call in this process, for ``peak_since``: the kernel's peak-RSS
    mark reset and the resident bytes now, or where it cannot be reset, a sampler of the RSS
    started now. The baseline is what the process holds just before the call, so the peak
    is the call's own high-water mark above it (an earlier peak of the process, such as a
    copy made and freed while the call's inputs were built, is not counted)."""
    if _reset_peak():
        return (_status_kib("VmRSS") or 0) * 1024
    return _RssSampler()


def peak_since(mark: _RssSampler | int) -> float:
    """MiB the process's resident memory rose, at its highest, above what it held at ``mark``
    (``peak_mark``)."""
    if isinstance(mark, _RssSampler):
        base, peak = mark.start, mark.stop()
    else:
        base, peak = mark, (_status_kib("VmHWM") or 0) * 1024
    return max(peak - base, 0) / MIB


def _resolve(fn):
    if isinstance(fn, str):  # "package.module:function", imported in the child
        module, _, name = fn.partition(":")
        return getattr(importlib.import_module(module), name)
    return fn


def _measure_in_child(conn, fn, preload) -> None:
    try:
        fn = _resolve(fn)
        for module in preload:  # imports are start-up, not the measured call's cost
            importlib.import_module(module)
        args, kwargs = conn.recv()
        # Baseline: the interpreter, the imports and the unpickled arguments, just before
        # the call; the peak is then the call's own high-water mark above it.
        mark = peak_mark()
        start = time.perf_counter()
        result = fn(*args, **kwargs)
        seconds = time.perf_counter() - start
        conn.send(("ok", seconds, peak_since(mark), result))
    except BaseException as err:  # noqa: BLE001 - everything goes back to the parent
        conn.send(("error", traceback.format_exc(), repr(err)))
    finally:
        conn.close()


def peak_memory_call(fn, *args, timeout: float | None = None, preload: tuple[str, ...] = (),
                     **kwargs) -> tuple[float, float, object]:
    """Run ``fn(*args, **kwargs)`` in a fresh child process; its time, peak memory and result.

    How it measures: a ``spawn``-ed interpreter (no memory shared with or inherited from
    this process) imports ``fn`` (a picklable module-level function, or a
    ``"module:function"`` string) and unpickles the arguments. Right before the call its
    resident set size is the baseline; on Linux the kernel's peak-RSS mark is reset there
    (``/proc/self/clear_refs``) and read back (``VmHWM``) after the call, so even a
    millisecond spike counts; elsewhere a thread samples the RSS every 5 ms (psutil).
    Modules named in ``preload`` (and those ``fn``'s module imports) are imported before
    the baseline, so a lazily imported library is not charged to the call.
    The peak is the call's extra resident memory above the baseline, in MiB: the memory
    the call itself needs, not the arguments or the interpreter. The time is the call's
    wall time inside the child (interpreter start-up and pickling excluded).

    Parameters
    ----------
    fn : callable or str
        The measured function; its result must be picklable (keep it small: it is sent
        back through a pipe).
    *args, **kwargs
        Its arguments (pickled to the child).
    timeout : float, optional
        Seconds to wait; the child is then terminated and ``TimeoutError`` raised.
    preload : tuple of str
        Modules to import in the child before measuring (e.g. ``("faiss",)``).

    Returns
    -------
    seconds : float
    peak_mib : float
    result : object

    Raises
    ------
    TimeoutError
        The call did not finish within ``timeout``.
    RuntimeError
        The call raised; the message holds the child's traceback.
    """
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()  # duplex: the arguments go down it, the answer comes back
    # Only the function crosses at start-up: multiprocessing writes that payload while it
    # still holds the pipe's other end, so a child dying before it has read a large one
    # (an import error) would block start() for ever. Sent over our pipe instead, the
    # arguments fail with BrokenPipeError if the child is gone.
    proc = ctx.Process(target=_measure_in_child, args=(child, fn, tuple(preload)), daemon=True)
    proc.start()
    child.close()  # the child's end now lives in the child only
    message = None
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        try:
            parent.send((args, kwargs))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the child died first: its traceback, or its exit code, is reported below
        while not parent.poll(0.5):  # wait for the answer, the child's death or the deadline
            if not proc.is_alive() and not parent.poll(0):
                raise RuntimeError(f"the measured call's process died (exit code {proc.exitcode})")
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"{getattr(fn, '__name__', fn)} did not finish within {timeout} s")
        try:
            message = parent.recv()
        except EOFError:  # closed without a word (killed, e.g. out of memory)
            proc.join()
            raise RuntimeError(f"the measured call's process died (exit code {proc.exitcode})") from None
    finally:
        proc.join(30 if message is not None else 0)  # a child that answered is exiting
        if proc.is_alive():  # timed out (or stuck after answering): this child only
            proc.terminate()
            proc.join(10)
        if proc.is_alive():
            proc.kill()
            proc.join()
        parent.close()
    if message[0] == "error":
        raise RuntimeError(f"measured call failed: {message[2]}\n{message[1]}")
    _, seconds, peak_mib, result = message
    return seconds, peak_mib, result


def seed_range(text: str) -> range:
    """``"5-9"`` -> range(5, 10), ``"3"`` -> range(3, 4): the benches' ``--seeds`` option."""
    first, _, last = text.partition("-")
    return range(int(first), int(last or first) + 1)


def real_set(name: str) -> tuple[np.ndarray, np.ndarray]:
    """A real data set's features and classes as the benches take them: digits as loaded (pixel
    counts on one scale), the others z-scored (``labelling.datasets.standardise``)."""
    from labelling.datasets import load, standardise

    X, y, _ = load(name)
    return (X if name == "digits" else standardise(X)), y
