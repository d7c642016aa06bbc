"""The compiled per-word steps (``acker._fastpath``) against their pure-Python twins.

The acking tests (``acking_harness.py``) run every tree both ways; these check the pieces
one by one: tuple storage, ``edge_meta``, ``ack_one``, the bolt side's bound ``ack`` and
``emit_child`` and their fall-backs, seeding, fork safety, reference counts (a leak or a
premature free in C shows up here), pickling, and that a process with
``SPARKSTORM_PURE_PYTHON=1`` runs an acked topology without the module (nor the acker's,
``acker._ledger``).
"""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
import textwrap

import pytest

from acker import fastpath, ledger
from acker.fastpath import PyTupleBase
from topology.runtime.compiled import describe
from topology.tuple import Tuple, TupleSource

ROOT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = TupleSource("split", 3, "default", ("word",))

compiled_only = pytest.mark.skipif(not fastpath.COMPILED, reason="acker._fastpath not built")
STORAGES = [PyTupleBase] + ([fastpath.TupleBase] if fastpath.COMPILED else [])


def test_ci_builds_the_compiled_module() -> None:
    """.ci/run sets SPARKSTORM_REQUIRE_SPEEDUPS: there a missing build is a failure."""
    if os.environ.get("SPARKSTORM_REQUIRE_SPEEDUPS"):
        assert fastpath.COMPILED, "acker._fastpath did not build (C compiler? headers?)"
        assert ledger.COMPILED, "acker._ledger did not build"
        assert "pure" not in describe()
    assert fastpath.COMPILED == (fastpath.edge_meta is not None)


@pytest.mark.parametrize("storage", STORAGES, ids=lambda s: s.__module__)
def test_storage_takes_positional_or_keyword_fields(storage: type) -> None:
    plain = storage(["a"], SOURCE)
    assert (plain.values, plain.source, plain.id, plain.anchors, plain.ack_val) == (
        ["a"],
        SOURCE,
        None,
        None,
        0,
    )
    tracked = storage(["a"], SOURCE, 11, 22)
    assert (tracked.id, tracked.anchors) == (11, 22)
    named = storage(values=["b"], source=SOURCE, anchors={1: 2})
    assert (named.values, named.id, named.anchors) == (["b"], None, {1: 2})
    named.ack_val ^= 2**64 - 1
    named.anchors = None
    assert (named.ack_val, named.anchors) == (2**64 - 1, None)
    with pytest.raises(TypeError):
        storage(["a"])


@compiled_only
def test_compiled_ack_val_is_an_unsigned_64_bit_field() -> None:
    tup = Tuple(["a"], SOURCE, 1, 2)
    for bad in (-1, 2**64):
        with pytest.raises(OverflowError):
            tup.ack_val = bad
    with pytest.raises(TypeError):
        tup.ack_val = "x"
    assert tup.ack_val == 0


@compiled_only
def test_edge_meta_makes_a_new_edge_of_the_parents_tree() -> None:
    parent = Tuple(["the cat"], SOURCE, 5, 77)
    first = fastpath.edge_meta(parent)
    second = fastpath.edge_meta(parent)
    assert first[1] == second[1] == 77
    assert first[0] != second[0]
    assert all(0 <= meta[0] < 2**64 for meta in (first, second))
    assert parent.ack_val == first[0] ^ second[0]
    with pytest.raises(TypeError, match="topology.Tuple"):
        fastpath.edge_meta(object())


@compiled_only
def test_ack_one_folds_a_single_tree_ack_into_the_turns_acks() -> None:
    acks = {77: 0b1010}
    tup = Tuple(["cat"], SOURCE, 0b0110, 77)
    tup.ack_val = 0b0001
    assert fastpath.ack_one(acks, tup) is True
    assert acks == {77: 0b1010 ^ 0b0110 ^ 0b0001}
    assert tup.anchors is None
    assert fastpath.ack_one(acks, tup) is False  # already acked: nothing more
    fresh = Tuple(["dog"], SOURCE, 9, 88)
    assert fastpath.ack_one(acks, fresh) and acks[88] == 9


@compiled_only
def test_ack_one_leaves_untracked_and_multi_tree_tuples_alone() -> None:
    acks: dict[int, int] = {}
    untracked = Tuple(["a"], SOURCE)
    joined = Tuple(["a"], SOURCE, 5, {1: 5, 2: 0})
    assert not fastpath.ack_one(acks, untracked)
    assert not fastpath.ack_one(acks, joined)
    assert acks == {} and joined.anchors == {1: 5, 2: 0}


@compiled_only
def test_ack_one_refuses_ids_that_are_not_64_bit_unsigned_ints() -> None:
    acks = {2: 5}
    for forged, error in (("forged", TypeError), (-1, OverflowError), (2**64, OverflowError)):
        tup = Tuple(["a"], SOURCE, forged, 2)
        with pytest.raises(error):
            fastpath.ack_one(acks, tup)
        assert acks == {2: 5} and tup.anchors == 2  # nothing changed
    assert fastpath.ack_one(acks, Tuple(["a"], SOURCE, 2**64 - 1, 2))
    assert acks == {2: 5 ^ (2**64 - 1)}
    with pytest.raises(TypeError, match="dict"):
        fastpath.ack_one([], Tuple(["a"], SOURCE, 1, 2))


def reference_ack(acks: dict[int, int], tup: object) -> bool:
    """``BoltAcking``'s pure-Python one-tree ack, as a function (what ``ack_one`` mirrors)."""
    roots = tup.anchors  # type: ignore[attr-defined]
    if type(roots) is not int:
        return False
    acks[roots] = acks.get(roots, 0) ^ tup.id ^ tup.ack_val  # type: ignore[attr-defined]
    tup.anchors = None  # type: ignore[attr-defined]
    return True


@compiled_only
def test_ack_one_agrees_with_the_pure_python_ack_on_random_trees() -> None:
    import random

    rng = random.Random(5)
    compiled_acks: dict[int, int] = {}
    reference_acks: dict[int, int] = {}
    roots = [rng.getrandbits(64) for _ in range(20)] + [True, 3]
    for _ in range(2000):
        anchors = rng.choice(roots + [None, {1: 2}])
        edge, ack_val = rng.getrandbits(64), rng.getrandbits(64)
        one, two = Tuple(["w"], SOURCE, edge, anchors), PyTupleBase(["w"], SOURCE, edge, anchors)
        one.ack_val = two.ack_val = ack_val
        assert fastpath.ack_one(compiled_acks, one) == reference_ack(reference_acks, two)
        assert one.anchors == two.anchors
    assert compiled_acks == reference_acks and len(compiled_acks) == 21


@compiled_only
def test_ack_one_leaves_look_alike_tuples_to_the_collectors_own_path() -> None:
    class LookAlike:
        id, anchors, ack_val = 5, 77, 0

    tracked = LookAlike()
    assert fastpath.ack_one({}, tracked) is False  # BoltAcking's general path takes it
    assert tracked.anchors == 77


@compiled_only
def test_the_remembered_tuple_subtype_never_admits_another_type() -> None:
    """The compiled type check remembers the TupleBase subclass it saw last: subclasses
    taking turns, a dropped one, and look-alikes after each still get the right answer."""

    class Mine(Tuple):
        pass

    class LookAlike:
        id, anchors, ack_val = 5, 77, 0

    kinds: list[type] = [Tuple, Mine, fastpath.TupleBase]
    for round_ in range(3):
        for kind in kinds:
            acks: dict[int, int] = {}
            tup = kind(["w"], SOURCE, 3, 40 + round_)
            assert fastpath.ack_one(acks, tup) is True and acks == {40 + round_: 3}
            assert fastpath.ack_one({}, LookAlike()) is False
            assert fastpath.edge_meta(kind(["w"], SOURCE, 1, 9))[1] == 9
            with pytest.raises(TypeError):
                fastpath.edge_meta(LookAlike())
    del Mine, kinds  # (the remembered type outlives its name: still only it is admitted)
    assert fastpath.ack_one({}, LookAlike()) is False


@compiled_only
def test_edge_meta_wants_a_parent_in_exactly_one_tree() -> None:
    for anchors in (None, {1: 1, 2: 1}):
        parent = Tuple(["s"], SOURCE, 1, anchors)
        with pytest.raises(ValueError, match="exactly one tree"):
            fastpath.edge_meta(parent)
        assert parent.ack_val == 0


@pytest.mark.parametrize("storage", STORAGES, ids=lambda s: s.__module__)
def test_a_deleted_field_reads_as_missing(storage: type) -> None:
    tup = storage(["a"], SOURCE, 1, 2)
    del tup.anchors
    with pytest.raises(AttributeError):
        tup.anchors  # noqa: B018
    if storage is not PyTupleBase:
        assert fastpath.ack_one({}, tup) is False
        with pytest.raises(ValueError):
            fastpath.edge_meta(tup)


@compiled_only
def test_the_garbage_collector_sees_every_field() -> None:
    import gc

    values, source, anchors = ["a"], SOURCE, {1: 2}
    tup = Tuple(values, source, 10**30, anchors)
    referents = gc.get_referents(tup)
    for field in (values, source, anchors, 10**30):
        assert any(r is field or r == field for r in referents)
    values.append(tup)  # a cycle through the C struct is collected
    gc.collect()  # (what earlier tests left: the count below is this cycle's alone)
    del tup, values, referents, field  # (referents held the list: the cycle was reachable)
    assert gc.collect() == 2


REENTRANT_ACK = textwrap.dedent(
    """
    from acker import fastpath
    from topology.tuple import Tuple, TupleSource

    assert fastpath.COMPILED
    ROOT = 2**80 + 12345
    source = TupleSource("c", 1, "default", ("w",))

    class Meddler(int):  # same hash as the root: the dict compares them with __eq__
        def __eq__(self, other):
            tup.anchors = None  # drops the tuple's reference to the root mid-ack
            junk = [object() for _ in range(1000)]  # reuses freed memory
            return False
        __hash__ = int.__hash__

    acks = {Meddler(ROOT): 0}
    for _ in range(3):
        tup = Tuple(["w"], source, 3, int(str(ROOT)))  # a root only the tuple holds
        assert fastpath.ack_one(acks, tup)
    print(len(acks), tup.anchors, sorted(acks.values()))
    """
)


@compiled_only
@pytest.mark.timeout(60)
def test_ack_one_survives_a_key_that_resets_the_tuple_mid_ack() -> None:
    done = subprocess.run(
        [sys.executable, "-c", REENTRANT_ACK],
        cwd=ROOT_DIR,
        env=dict(os.environ, PYTHONPATH=ROOT_DIR, PYTHONMALLOC="debug"),  # catches a use
        capture_output=True,  # of freed memory
        text=True,
        timeout=50,
    )
    assert done.returncode == 0, f"rc {done.returncode}: {done.stderr[-2000:]}"
    assert done.stdout.split() == ["2", "None", "[0,", "3]"]  # 3 ^ 3 ^ 3 under the real root


@compiled_only
def test_the_compiled_steps_keep_reference_counts_balanced() -> None:
    root = 2**63 + 12345  # a fresh int object, not a cached small one
    base = sys.getrefcount(root)
    metas = []
    acks: dict[int, int] = {}
    for _ in range(1000):
        parent = Tuple(["s"], SOURCE, 1, root)
        metas.append(fastpath.edge_meta(parent))
        child = Tuple(["w"], SOURCE, metas[-1][0], root)
        assert fastpath.ack_one(acks, child)
        fastpath.ack_one(acks, parent)
    # 1,000 envelopes and the acks dict's key hold it; every tuple let it go
    assert sys.getrefcount(root) == base + 1000 + 1
    assert acks == {root: 1000 % 2}
    metas.clear()
    assert sys.getrefcount(root) == base + 1


@compiled_only
def test_seeded_edges_repeat_and_differ_by_seed() -> None:
    def edges(seed: int) -> list[int]:
        fastpath.seed_edges(seed)
        parent = Tuple(["s"], SOURCE, 1, 2)
        return [fastpath.edge_meta(parent)[0] for _ in range(5)]

    assert edges(7) == edges(7)
    assert edges(7) != edges(8)


@compiled_only
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_repeat_its_parents_edges() -> None:
    fastpath.seed_edges(99)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its first edge, then out without pytest's teardown
        try:
            edge = fastpath.edge_meta(Tuple(["s"], SOURCE, 1, 2))[0]
            os.write(write, str(edge).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child_edge = int(pipe.read())
    os.waitpid(pid, 0)
    parent_edge = fastpath.edge_meta(Tuple(["s"], SOURCE, 1, 2))[0]
    assert child_edge != parent_edge


def test_pickles_of_the_earlier_pure_python_tuple_still_load() -> None:
    """Before the compiled storage, Tuple pickled in copyreg's slot form."""
    import copyreg
    import io

    class SlotForm(pickle.Pickler):
        def reducer_override(self, obj: object) -> object:
            if type(obj) is Tuple:
                slots = {"values": obj.values, "source": obj.source, "id": obj.id}
                slots.update(anchors=obj.anchors, ack_val=obj.ack_val)
                return copyreg.__newobj__, (Tuple,), (None, slots)
            return NotImplemented

    tup = Tuple(["cat"], SOURCE, 11, 22)
    tup.ack_val = 7
    buffer = io.BytesIO()
    SlotForm(buffer, protocol=2).dump(tup)
    again = pickle.loads(buffer.getvalue())
    assert (again.values, again.id, again.anchors, again.ack_val) == (["cat"], 11, 22, 7)
    assert again.stream == "default"


def test_tuples_pickle_and_copy_with_their_acking_state() -> None:
    tup = Tuple(["cat", 3], SOURCE, 11, 22)
    tup.ack_val = 2**64 - 5
    for again in (pickle.loads(pickle.dumps(tup)), copy.copy(tup), copy.deepcopy(tup)):
        assert type(again) is Tuple
        assert (again.values, again.id, again.anchors, again.ack_val) == (
            ["cat", 3],
            11,
            22,
            2**64 - 5,
        )
        assert again.source.component == "split" and again["word"] == "cat"


PURE_RUN = textwrap.dedent(
    """
    import pickle
    from acker import fastpath
    from topology import BasicBolt, Bolt, Spout, TopologyBuilder, config
    from topology.runtime.inprocess import InProcessRunner
    from topology.tuple import Tuple, TupleSource

    class Sentences(Spout):
        outputs = ["sentence"]
        def open(self, conf, context):
            self.i, self.acked, self.failed = 0, 0, 0
        def next_tuple(self):
            if self.i < 300:
                self.emit([f"a{self.i % 7} b c"], msg_id=self.i)
                self.i += 1
        def ack(self, msg_id):
            self.acked += 1
        def fail(self, msg_id):
            self.failed += 1

    class Split(BasicBolt):
        outputs = ["word"]
        def process(self, tup):
            for word in tup.values[0].split():
                self.emit([word])

    class Count(Bolt):
        def prepare(self, conf, context):
            self.words = 0
        def execute(self, tup):
            self.words += 1
            self.ack(tup)

    assert not fastpath.COMPILED and fastpath.TupleBase is fastpath.PyTupleBase
    from acker import ledger
    assert not ledger.COMPILED  # the acker's compiled steps are off too
    from topology.runtime.net import codec
    assert not codec.COMPILED  # and the frame checks
    from topology.runtime.compiled import describe
    from topology.runtime import basic_path
    assert not basic_path.COMPILED  # and a BasicBolt's loop and emit
    from topology.runtime import spout_path
    assert not spout_path.COMPILED  # and a spout's emit
    assert describe().count("pure Python") == 5
    tup = Tuple(["a"], TupleSource("c", 1, "default", ("w",)), 1, 2)
    assert pickle.loads(pickle.dumps(tup)).anchors == 2
    builder = TopologyBuilder()
    builder.set_spout("sentences", Sentences())
    builder.set_bolt("split", Split(), parallelism=2).shuffle_grouping("sentences")
    builder.set_bolt("count", Count()).fields_grouping("split", ["word"])
    conf = config.resolve({"topology.max.spout.pending": 50}, where="topology")
    runner = InProcessRunner(builder.create_topology(), conf)
    runner.activate()
    for _ in range(500):
        runner.turn()
    spout = runner.instance("sentences")
    print(runner.instance("count").words, spout.acked, spout.failed)
    """
)


@pytest.mark.timeout(60)
def test_pure_python_mode_runs_an_acked_topology_without_the_module() -> None:
    env = dict(os.environ, SPARKSTORM_PURE_PYTHON="1", PYTHONPATH=ROOT_DIR)
    done = subprocess.run(
        [sys.executable, "-c", PURE_RUN],
        cwd=ROOT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=50,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    words, acked, failed = (int(v) for v in done.stdout.split())
    assert (words, acked, failed) == (900, 300, 0)


@compiled_only
@pytest.mark.timeout(120)
def test_the_acking_tests_pass_on_the_pure_python_storage_too() -> None:
    """In this process ``Tuple`` stands on the compiled storage; the acking tests' "pure"
    runs only swap BoltAcking's steps.  Here they run on ``PyTupleBase`` as well."""
    modules = ["tests/unit/test_acking_trees.py", "tests/unit/test_acking_fail_reset.py"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *modules],
        cwd=ROOT_DIR,
        env=dict(os.environ, SPARKSTORM_PURE_PYTHON="1", PYTHONPATH=ROOT_DIR),
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout and "failed" not in done.stdout


class Lane:
    """One task's lane as ``push`` holds it: (append value, append meta)."""

    def __init__(self) -> None:
        self.vals: list[object] = []
        self.metas: list[object] = []
        self.push = (self.vals.append, self.metas.append)


@compiled_only
def test_the_bound_ack_folds_one_tree_and_hands_the_rest_to_the_general_path() -> None:
    general: list[object] = []
    acks: dict[int, int] = {}
    one = Tuple(["w"], SOURCE, 5, 9)
    one.ack_val = 3
    assert fastpath.ack(acks, general.append, one) is None
    assert acks == {9: 5 ^ 3} and one.anchors is None and general == []
    several = Tuple(["w"], SOURCE, 5, {1: 2, 3: 4})
    fastpath.ack(acks, general.append, several)  # several trees: the general path
    untracked = Tuple(["w"], SOURCE)
    fastpath.ack(acks, general.append, untracked)  # untracked: nothing at all
    fastpath.ack(acks, general.append, one)  # acked already: nothing either

    class LookAlike:
        id, anchors, ack_val = 5, 77, 0

    look_alike = LookAlike()
    fastpath.ack(acks, general.append, look_alike)
    assert general == [several, look_alike] and acks == {9: 5 ^ 3}
    with pytest.raises(OverflowError):
        fastpath.ack(acks, general.append, Tuple(["w"], SOURCE, -1, 9))


@compiled_only
def test_the_bound_emit_child_sends_one_tree_to_one_task_else_the_general_path() -> None:
    general: list[tuple[object, ...]] = []

    def slow(*args: object) -> None:
        general.append(args)

    lane = Lane()
    push = {4: lane.push}
    parent = Tuple(["s"], SOURCE, 1, 2**70)
    fastpath.emit_child(slow, push, [4], ["w"], parent)
    assert lane.vals == [["w"]] and general == []
    [[edge, root]] = lane.metas
    assert root == 2**70 and parent.ack_val == edge
    for args in (
        (push, [4, 4], ["w"], parent),  # two tasks
        (push, [4], ["w"], Tuple(["s"], SOURCE, 1, {1: 1})),  # several trees
        (push, [4], ["w"], Tuple(["s"], SOURCE)),  # untracked
        (push, [4], ["w"], None),  # no input
        (push, [5], ["w"], parent),  # no such lane: the general path raises KeyError
        (push, (4,), ["w"], parent),  # not a list
    ):
        fastpath.emit_child(slow, *args)
    assert len(general) == 6 and len(lane.vals) == 1 and parent.ack_val == edge
    with pytest.raises(ZeroDivisionError):  # a lane that raises: the error, no meta
        fastpath.emit_child(slow, {4: (lambda v: 1 / 0, lane.metas.append)}, [4], ["w"], parent)
    assert len(lane.metas) == 1


@compiled_only
def test_the_bound_steps_keep_reference_counts_balanced() -> None:
    root = 2**63 + 54321
    base = sys.getrefcount(root)
    lane = Lane()
    push = {4: lane.push}
    acks: dict[int, int] = {}
    for _ in range(1000):
        parent = Tuple(["s"], SOURCE, 1, root)
        fastpath.emit_child(None, push, [4], ["w"], parent)
        child = Tuple(["w"], SOURCE, lane.metas[-1][0], root)  # type: ignore[index]
        fastpath.ack(acks, None, child)
        fastpath.ack(acks, None, parent)
    assert sys.getrefcount(root) == base + 1000 + 1  # the metas and the acks key
    lane.metas.clear()
    assert sys.getrefcount(root) == base + 1


@pytest.mark.parametrize("compiled", [True, False] if fastpath.COMPILED else [False])
def test_bolt_acking_twins_agree(compiled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """``BoltAcking``'s bound ``emit_child`` / ``ack``, compiled or pure: the same trees."""
    from acker import AckOutbox, BoltAcking

    monkeypatch.setattr(fastpath, "COMPILED", compiled)
    outbox = AckOutbox([100])
    acking = BoltAcking("split", 3, outbox)
    lanes = {t: Lane() for t in (4, 5)}
    push = {t: lane.push for t, lane in lanes.items()}
    one = Tuple(["s"], SOURCE, 11, 2**70)
    joined = Tuple(["s"], SOURCE, 12, {2**70: 12, 2**71: 12})
    for parent, tasks in ((one, [4]), (one, [4, 5]), (joined, [5])):
        acking.emit_child(push, tasks, ["w"], parent)
    children = [
        Tuple(v, SOURCE, m[0], m[1])  # type: ignore[index]
        for lane in lanes.values()
        for v, m in zip(lane.vals, lane.metas)
    ]
    assert len(children) == 4
    for tup in [one, joined, *children]:
        acking.ack(tup)
        assert tup.anchors is None
    # every edge made here cancels: what is left is the inputs' own edges (the trees'
    # registered ones), so each tree would complete
    assert outbox.acks == {2**70: 11 ^ 12, 2**71: 12}
