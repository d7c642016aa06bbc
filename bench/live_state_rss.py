"""The lmdb live state alone, without a topology: RSS while 10,000,000 keys are counted.

A count (``put(k, get(k, 0) + 1)``) over keys ``(i × 2654435761) mod keys`` — every key
once per ``keys`` operations, in scrambled order, so nearly every operation misses the
cache — with ``take_changes()`` every 60,000 operations, as a checkpoint a second would
at that rate (the changes are dropped: this measures the store, not a checkpoint
provider).  Prints operations/s and the process's RSS (total / anonymous / file-backed,
MB, from /proc) every million operations::

    python3 bench/live_state_rss.py [--keys 10000000] [--ops 12000000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from topology.state.live.lmdb_store import LmdbState  # noqa: E402

SCRAMBLE = 2_654_435_761


def rss() -> str:
    found = {}
    with open("/proc/self/status") as status:
        for line in status:
            name, _, rest = line.partition(":")
            if name in ("VmRSS", "RssAnon", "RssFile"):
                found[name] = int(rest.split()[0]) // 1024
    return f"{found['VmRSS']} / {found['RssAnon']} / {found['RssFile']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=10_000_000)
    parser.add_argument("--ops", type=int, default=12_000_000)
    args = parser.parse_args()
    keys = args.keys
    with tempfile.TemporaryDirectory() as folder:
        state = LmdbState(os.path.join(folder, "state"))
        print(
            "| operations | ops/s (last million) | keys on disk | file MB "
            "| RSS MB: total / anon / file |"
        )
        print("|---|---|---|---|---|")
        started = time.perf_counter()
        for i in range(args.ops):
            key = (i * SCRAMBLE) % keys
            state.put(key, state.get(key, 0) + 1)
            if i % 60_000 == 59_999:
                state.take_changes()
            if i % 1_000_000 == 999_999:
                now = time.perf_counter()
                size = state.size()
                print(
                    f"| {i + 1:,} | {1_000_000 / (now - started):,.0f} | {size.keys:,} "
                    f"| {size.bytes / 1e6:,.0f} | {rss()} |",
                    flush=True,
                )
                started = now
        state.close()


if __name__ == "__main__":
    main()
