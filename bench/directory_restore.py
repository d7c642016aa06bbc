"""What streaming costs a ``directory`` restore: ``read_all`` of one scope on this branch
against a checkout that reads it whole (``--baseline``, default /work/main), same run.

    python3 bench/directory_restore.py [--entries 300000] [--rounds 5] [--baseline PATH]

Each round builds, with each version's own ``DirectoryBackend``, a scope of ``entries``
keys written over 3 checkpoints by 2 writers, each checkpoint rewriting two thirds of the
keys (16-byte values; 6 files, the 3 checkpoints retained by default), then times one
``read_all`` of the newest checkpoint.  It prints seconds
per version, their ratio per round and the median ratio, and the peak of Python's
allocations (``tracemalloc``) during one more read of each.
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

HERE = str(Path(__file__).resolve().parents[1])


def backend_class(root: str) -> Any:
    """``DirectoryBackend`` as the checkout at ``root`` has it."""
    for name in [m for m in sys.modules if m == "topology" or m.startswith("topology.")]:
        del sys.modules[name]
    sys.path.insert(0, root)
    try:
        return importlib.import_module("topology.state.backends.directory").DirectoryBackend
    finally:
        sys.path.pop(0)


def build(cls: Any, folder: str, entries: int) -> Any:
    """``entries`` keys; each of 3 checkpoints rewrites two thirds of them (2 writers)."""
    backend = cls(folder)  # 3 checkpoints retained, the default: nothing folded yet
    for checkpoint in (1, 2, 3):
        for writer in range(2):
            keys = [i for i in range(writer, entries, 2) if i % 3 != checkpoint % 3]
            backend.write(checkpoint, 1, "s", [(b"%010d" % i, b"%016d" % checkpoint) for i in keys])
        backend.complete(checkpoint, 1, {})
    return backend


def read(backend: Any) -> int:
    return sum(1 for _ in backend.read_all(3, "s"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", default="/work/main")
    args = parser.parse_args()
    versions = {"baseline": args.baseline, "branch": HERE}
    scratch = tempfile.mkdtemp(prefix="directory-restore-")
    try:
        ratios = []
        peaks: dict[str, int] = {}
        for round_ in range(args.rounds):
            took = {}
            for name, root in versions.items():
                folder = tempfile.mkdtemp(dir=scratch)
                backend = build(backend_class(root), folder, args.entries)
                began = time.perf_counter()
                count = read(backend)
                took[name] = time.perf_counter() - began
                if round_ == 0:
                    tracemalloc.start()
                    read(backend)
                    peaks[name] = tracemalloc.get_traced_memory()[1]
                    tracemalloc.stop()
                shutil.rmtree(folder)
            ratios.append(took["branch"] / took["baseline"])
            print(
                f"round {round_}: baseline {took['baseline']:.3f} s, branch "
                f"{took['branch']:.3f} s ({count:,} entries), ratio {ratios[-1]:.2f}"
            )
        print(f"median time ratio branch/baseline: {statistics.median(ratios):.2f}")
        for name, peak in peaks.items():
            print(f"peak allocations during a read, {name}: {peak / 1e6:.1f} MB")
    finally:
        shutil.rmtree(scratch, True)


if __name__ == "__main__":
    main()
