"""Text work over every core, in the documents' order, with a bounded read-ahead.

ftfy's repairs (prepare), spaCy's word splitting (bpe) and BPE encoding (tokenize) each run on one core and are
most of the time their stages take. Documents (or task examples) go to worker processes in chunks and come back in
order, so the outputs are the bytes one process writes. At most `READ_AHEAD` chunks per worker are read ahead of
the writer, so memory stays bounded whatever the corpus's size (BooksCorpus is ~5 GB of text, in documents of up
to a few MB).
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
from collections import deque
from typing import Callable, Iterable, Iterator, TypeVar

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


def ordered_map(work: Callable[[list[Item]], Result], texts: Iterable[Item], workers: int | None = None,
                initializer: Callable | None = None, initargs: tuple = (),
                length: Callable[[Item], int] = len) -> Iterator[Result]:
    """`work(chunk)` for each chunk of `texts` (`chunks`, sized by `length`: characters of a text), yielded in
    order. `work` and `initializer` must be module-level functions (worker processes import them);
    `initializer(*initargs)` runs once per worker, and in this process when one core or one chunk is all there is
    (then no worker is started)."""
    workers = available_cores() if workers is None else workers
    chunked = chunks(texts, length=length)
    opening = list(itertools.islice(chunked, 2))
    if workers <= 1 or len(opening) < 2:  # one core, or one chunk of text: a worker would only add its start
        if initializer is not None:
            initializer(*initargs)
        yield from map(work, itertools.chain(opening, chunked))
        return
    with multiprocessing.Pool(workers, initializer, initargs) as pool:
        pending: deque = deque()
        for chunk in itertools.chain(opening, chunked):
            pending.append(pool.apply_async(work, (chunk,)))
            if len(pending) >= READ_AHEAD * workers:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()
