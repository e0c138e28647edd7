"""Text work over every core, in the documents' order, with a bounded read-ahead.

ftfy's repairs (prepare), spaCy's word splitting (bpe) and BPE encoding (tokenize) each run on one core and are
most of the time their stages take. Documents (or task examples) go to worker processes in chunks and come back in
order, so the outputs are the bytes one process writes. At most `READ_AHEAD` chunks per worker are read ahead of
the writer, so memory stays bounded whatever the corpus's size (books1's 6.7 GB of text comes in documents of up
to a few MB: docs/measurements/data-scale-books1.json).
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import os
import signal
import time
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Iterable, Iterator, TypeVar

from gpt1.errors import UserError

Item = TypeVar("Item")
Result = TypeVar("Result")

CHUNK_DOCUMENTS = 256
CHUNK_CHARACTERS = 1 << 20  # a chunk ends at this many characters too: books are long documents
READ_AHEAD = 3


def available_cores() -> int:
    """The cores this process may run on (a container's or taskset's limit, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


class WorkerDied(UserError):
    """A worker process ended in the middle of the stage's work (the kernel's out-of-memory killer, most often)."""

    exit_code = 1


def _death(exit_codes: list[int | None]) -> WorkerDied:
    # The pool stops the other workers with SIGTERM once one has died: the death is the other code.
    codes = sorted((code for code in exit_codes if code not in (None, 0)), key=lambda code: code == -signal.SIGTERM)
    if codes and codes[0] < 0:
        name = signal.Signals(-codes[0]).name if -codes[0] in signal.valid_signals() else f"signal {-codes[0]}"
        how = f"was killed by {name}"
        cause = ("most likely the kernel's out-of-memory killer: give the stage more memory or run it on fewer cores "
                 "(`taskset -c 0 ...`)" if codes[0] == -signal.SIGKILL else "stopped from outside")
    else:
        how = f"exited with status {codes[0]}" if codes else "ended"
        cause = "most likely out of memory: give the stage more memory or run it on fewer cores (`taskset -c 0 ...`)"
    return WorkerDied(f"a worker process {how} in the middle of the work, {cause}; nothing was published")


def _exit_codes(processes: list[multiprocessing.process.BaseProcess], seconds: float = 5.0) -> list[int | None]:
    """The processes' exit codes once they have ended. The pool's own thread reaps them at the same time, and whichever
    waits second reads no code until the first has stored it, so this waits (a little) for every code."""
    deadline = time.monotonic() + seconds
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    while any(process.exitcode is None for process in processes) and time.monotonic() < deadline:
        time.sleep(0.01)
    return [process.exitcode for process in processes]


def chunks(texts: Iterable[Item], documents: int = CHUNK_DOCUMENTS, characters: int = CHUNK_CHARACTERS,
           length: Callable[[Item], int] = len) -> Iterator[list[Item]]:
    """Consecutive documents, up to `documents` of them or until `characters` (`length` of each) are reached."""
    chunk: list[Item] = []
    size = 0
    for text in texts:
        chunk.append(text)
        size += length(text)
        if len(chunk) >= documents or size >= characters:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


class Workers:
    """Worker processes that several `map` calls share (a stage's task splits and corpus parts, or its two corpus
    splits), so each stage starts them once: with `spawn` or `forkserver` (macOS; Linux from Python 3.14) every start
    re-imports the modules. They start on the first call with two chunks or more: one core, or inputs of one chunk,
    start none. `initializer(*initargs)` runs once per worker, and once in this process when a call runs here.
    Use as a context manager: the workers stop on exit."""

    def __init__(self, count: int | None = None, initializer: Callable | None = None, initargs: tuple = ()):
        self.count = available_cores() if count is None else count
        self.initializer, self.initargs = initializer, initargs
        self._pool = None
        self._processes: list[multiprocessing.process.BaseProcess] = []
        self._initialised_here = False

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, error_type, *_) -> None:
        if self._pool is None:
            return
        if error_type is not None:
            # An error stops the stage: nothing is left to finish, and waiting can hang (a job that could not be
            # pickled leaves the pool waiting for its result), so the workers are stopped first.
            for process in self._processes:
                if process.is_alive():
                    process.terminate()
        self._pool.shutdown(wait=error_type is None, cancel_futures=True)
        self._pool = None

    def map(self, work: Callable[[list[Item]], Result], texts: Iterable[Item],
            length: Callable[[Item], int] = len) -> Iterator[Result]:
        """`work(chunk)` for each chunk of `texts` (`chunks`, sized by `length`: characters of a text), yielded in
        order. `work` and the initializer must be module-level functions (worker processes import them)."""
        chunked = chunks(texts, length=length)
        opening = list(itertools.islice(chunked, 2))
        if self._pool is None and (self.count <= 1 or len(opening) < 2):  # a worker would only add its start
            if self.initializer is not None and not self._initialised_here:
                self.initializer(*self.initargs)
                self._initialised_here = True
            yield from map(work, itertools.chain(opening, chunked))
            return
        if self._pool is None:
            # concurrent.futures, not multiprocessing.Pool: a Pool whose worker is killed waits for ever for its result.
            self._pool = ProcessPoolExecutor(self.count, initializer=self.initializer, initargs=self.initargs)
        pending: deque = deque()
        try:
            for chunk in itertools.chain(opening, chunked):
                pending.append(self._pool.submit(work, chunk))
                self._note_processes()
                if len(pending) >= READ_AHEAD * self.count:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        except BrokenProcessPool:
            self._pool = None  # its processes are gone or stopping; there is nothing to shut down cleanly
            raise _death(_exit_codes(self._processes)) from None

    def _note_processes(self) -> None:
        """Keep the worker processes' handles while they run, to read a dead one's exit code: the pool's own (it
        forgets them once broken), not `multiprocessing.active_children()`, which drops a process that has ended."""
        known = {process.pid for process in self._processes}
        running = getattr(self._pool, "_processes", None) or {}  # concurrent.futures' pid -> process, since 3.2
        self._processes += [process for process in list(running.values()) if process.pid not in known]


def shared(workers: Workers | None, start: Callable[[], Workers] = Workers) -> contextlib.AbstractContextManager[Workers]:
    """The caller's workers, left running for its next call, or (None) `start()`'s for this call alone (by default
    every core, no initializer), stopped when it ends."""
    return start() if workers is None else contextlib.nullcontext(workers)


def ordered_map(work: Callable[[list[Item]], Result], texts: Iterable[Item], workers: int | None = None,
                initializer: Callable | None = None, initargs: tuple = (),
                length: Callable[[Item], int] = len) -> Iterator[Result]:
    """`Workers(workers, initializer, initargs).map(work, texts, length)` for one input: workers of their own."""
    with Workers(workers, initializer, initargs) as pool:
        yield from pool.map(work, texts, length)
