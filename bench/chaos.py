"""Chaos run on the multi-host cluster: kills and outages under load, then count what was lost.

The cluster of the multi-host test tier (``tests/cluster/harness.py``: a 3-node ZooKeeper
ensemble, a Spark standalone master, two Spark worker hosts, a leader and a standby
nimbus, each host a network namespace on this machine) runs the at-least-once ``ledger``
topology (two spout tasks at ``--rate`` new ids/s each -> pass -> sink, every spout task
keeping an on-disk ledger of what it emitted and what was acked) for ``--minutes``:

* every ``--kill-every`` seconds a random topology worker process is killed with SIGKILL;
* at a third of the run the leader nimbus is killed with SIGKILL (and restarted as a
  standby); the worker pids must be the same before and after;
* at two thirds all of ZooKeeper is stopped for 20 s.

Then the spouts stop taking new ids, everything emitted drains, and the ledgers tell:
msg ids emitted, acked, lost (emitted and never acked: must be 0), duplicate deliveries at
the sink, and the longest gap between two acks.  Needs root (network namespaces)::

    python3 bench/chaos.py                 # 10 minutes
    python3 bench/chaos.py --minutes 3     # a quick look
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.cluster.components import STOP_FILE, ledger_summary, longest_gap  # noqa: E402
from tests.cluster.harness import ZK_NODES, ClusterStack  # noqa: E402
from tests.cluster.netns import check_available  # noqa: E402


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


def worker_pids(stack: ClusterStack) -> dict[str, int]:
    beats = stack.probe("beats", "chaos") or {}
    return {w: b["pid"] for w, b in beats.items()}


def kill_a_worker(stack: ClusterStack, rng: random.Random) -> None:
    pids = worker_pids(stack)
    if not pids:
        log("no worker heartbeat to pick from (relaunching?)")
        return
    worker, pid = rng.choice(sorted(pids.items()))
    try:
        os.kill(pid, signal.SIGKILL)
        log(f"killed worker {worker} (pid {pid})")
    except ProcessLookupError:
        log(f"worker {worker} (pid {pid}) was already gone")


def kill_the_leader(stack: ClusterStack) -> bool:
    """SIGKILL the leader nimbus, wait for the standby; True if worker pids are unchanged."""
    leader = stack.leader_host()
    if leader is None:
        log("no leader to kill")
        return False
    before = worker_pids(stack)
    stack.nimbus[leader].send_signal(signal.SIGKILL)
    stack.nimbus[leader].wait(10)
    log(f"killed the leader nimbus on {leader}")
    stack.wait_for(lambda: stack.leader_host() not in (None, leader), 90, "the standby")
    time.sleep(3)
    after = worker_pids(stack)
    log(f"{stack.leader_host()} leads; worker pids {before} -> {after}")
    stack.start_nimbus(leader)
    return before == after


def zookeeper_outage(stack: ClusterStack, secs: float = 20.0) -> None:
    for node in ZK_NODES:
        stack.stop_zookeeper(node)
    log(f"ZooKeeper stopped (all {len(ZK_NODES)} nodes) for {secs:g}s")
    time.sleep(secs)
    for node in ZK_NODES:
        stack.start_zookeeper(node)
    stack.wait_for(lambda: stack.probe("ready"), 120, "ZooKeeper back")
    log("ZooKeeper back")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--kill-every", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=250.0, help="new ids/s per spout task")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    reason = check_available()
    if reason is not None:
        print(f"chaos needs network namespaces: {reason}", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="sparkstorm-chaos-"))
    folder = work / "ledger"
    folder.mkdir()
    stack = ClusterStack(work)
    try:
        log(f"starting the cluster (logs in {work / 'logs'})")
        stack.start()
        stack.probe("submit-ledger", "chaos", str(folder), str(args.rate), timeout=240)
        log("topology running")
        start = time.time()
        end = start + args.minutes * 60
        events = {"nimbus": start + (end - start) / 3, "zookeeper": start + 2 * (end - start) / 3}
        next_kill = start + args.kill_every
        kills = 0
        pids_kept: bool | None = None
        while time.time() < end:
            now = time.time()
            if "nimbus" in events and now >= events["nimbus"]:
                del events["nimbus"]
                pids_kept = kill_the_leader(stack)
                next_kill = time.time() + args.kill_every
            elif "zookeeper" in events and now >= events["zookeeper"]:
                del events["zookeeper"]
                zookeeper_outage(stack)
            elif now >= next_kill:
                kill_a_worker(stack, rng)
                kills += 1
                next_kill = now + args.kill_every
            time.sleep(1.0)
        (folder / STOP_FILE).touch()
        log("no more new ids; waiting for what was emitted to be acked")
        deadline = time.time() + 180
        summary = ledger_summary(str(folder))
        while summary["lost"] and time.time() < deadline:
            time.sleep(5)
            summary = ledger_summary(str(folder))
        gap = longest_gap(summary["ack_times"], start, end)
    finally:
        stack.destroy()
    lost = len(summary["lost"])
    print()
    print(
        "| minutes | worker kills | emitted | acked | lost | duplicates | longest ack gap "
        "| nimbus kill kept worker pids |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print(
        f"| {args.minutes:g} | {kills} | {summary['emitted']:,} | {summary['acked']:,} | "
        f"{lost} | {summary['duplicates']:,} | {gap:.1f} s | {pids_kept} |"
    )
    if lost:
        print(f"LOST msg ids (first 20): {summary['lost'][:20]}")
    return 0 if lost == 0 and pids_kept else 1


if __name__ == "__main__":
    sys.exit(main())
