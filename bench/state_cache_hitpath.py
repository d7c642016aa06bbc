"""What the ``lmdb`` live state costs a count whose keys are all in its cache (the hit
path): 300,000 counts over 10,000 keys through :class:`LmdbState`, printed as counts per
second with the ``topology`` it imported, so two checkouts compare round by round:

    for r in 1 2 3 4 5 6 7; do
      PYTHONPATH=/work/main python3 bench/state_cache_hitpath.py
      PYTHONPATH=. python3 bench/state_cache_hitpath.py
    done
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

import topology
from topology.state.live.lmdb_store import LmdbState

COUNTS, KEYS, SCRAMBLE = 300_000, 10_000, 2_654_435_761


def main() -> None:
    folder = tempfile.mkdtemp(prefix="cache-hitpath-")
    state = LmdbState(os.path.join(folder, "s"), 128, single_field=True)
    keys = [(i * SCRAMBLE) % KEYS for i in range(COUNTS)]
    get, put = state.get, state.put
    start = time.perf_counter()
    for k in keys:
        put(k, get(k, 0) + 1)
    secs = time.perf_counter() - start
    assert sum(v for _, v in state.items()) == COUNTS
    state.close()
    shutil.rmtree(folder, ignore_errors=True)
    print(f"{os.path.dirname(topology.__file__)} {COUNTS / secs:,.0f} counts/s")


if __name__ == "__main__":
    main()
