"""Secret-looking ``-c KEY=VALUE`` values taken off this process's command line.

Every user of a machine can read every process's command line (``ps``,
``/proc/PID/cmdline``).  Once the CLI has its ``-c`` options, :func:`conceal` rewrites the
argument area the kernel shows for this process: the value of every ``-c`` whose key looks
secret (:func:`topology.config.is_secret_key`, with ``sparkstorm.redact.patterns``)
becomes ``****``.  ``sys.argv`` keeps the values; the area never grows (values shorter
than ``****`` become as many ``*``; the rest is padded with NULs).

How, on Linux: fields 48 and 49 of ``/proc/self/stat`` are the area's bounds, and a
process may write its own memory through ``/proc/self/mem``.  The area is written only
when it holds exactly what this process was started with (``sys.orig_argv``).  Elsewhere,
or when the kernel refuses, one warning line says the value stays visible.

Chosen over re-executing with the values moved to the environment: both leave the value
visible from the start of the process until its options are parsed (the interpreter's
start and sparkstorm's imports, a second or two), and a re-exec would pay that start twice
and hand the environment, secrets included, to every child.  Nothing here hides what ran
before this process (a wrapper script, a shell's history): secrets belong in a file or the
environment (docs/SECURITY.md); this keeps a ``-c`` secret from staying visible for the
whole life of a nimbus, a UI or ``sparkstorm local``.  Children never get conf on their
command lines: drivers and LocalCluster workers read it from their stdin, Spark workers
from their task, the Spark JVM gets secret-looking keys after its launch
(``topology/deploy/spark/backend.py``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence

import click

from topology.config import REDACTED, is_secret_key

#: The options whose values are ``KEY=VALUE`` items.
CONF_OPTIONS = ("-c", "--conf")
#: What this process's argument area shows now (None: what it was started with).
_shown: list[str] | None = None


def masked(item: str) -> str:
    """``KEY=VALUE`` with the value replaced by ``****`` (by as many ``*`` when shorter).

    >>> masked("ui.admin.token=s3cr3t-v4lue"), masked("db.password=ab")
    ('ui.admin.token=****', 'db.password=**')
    """
    key, _, value = item.partition("=")
    return f"{key}={REDACTED if len(value) >= len(REDACTED) else '*' * len(value)}"


def hidden(
    argv: Sequence[str], overrides: Iterable[str], patterns: Iterable[str] = ()
) -> list[str]:
    """``argv`` with the value of each of ``overrides`` (the ``-c`` items, as parsed) whose
    key looks secret masked, wherever it is given: ``-c ITEM``, ``--conf ITEM``,
    ``-cITEM`` or ``--conf=ITEM`` (pure).

    >>> hidden(["sparkstorm", "ui", "-c", "ui.admin.token=abcdef", "-c", "a=b"],
    ...        ["ui.admin.token=abcdef", "a=b"])
    ['sparkstorm', 'ui', '-c', 'ui.admin.token=****', '-c', 'a=b']
    """
    extra = tuple(patterns)
    secret = {
        item
        for item in overrides
        if item.partition("=")[2] and is_secret_key(item.partition("=")[0].strip(), extra)
    }
    out: list[str] = []
    after_option = False
    for arg in argv:
        if after_option and arg in secret:
            arg = masked(arg)
        elif arg.startswith("--conf=") and arg[7:] in secret:
            arg = "--conf=" + masked(arg[7:])
        elif arg.startswith("-c") and arg[2:] in secret:
            arg = "-c" + masked(arg[2:])
        out.append(arg)
        after_option = arg in CONF_OPTIONS
    return out


def conceal(overrides: Iterable[str], patterns: Iterable[str] = ()) -> None:
    """Mask the secret-looking ``overrides`` in this process's command line as others see
    it (see the module); a warning line on stderr when it cannot be done."""
    global _shown
    current = list(sys.orig_argv) if _shown is None else _shown
    wanted = hidden(current, overrides, patterns)
    if wanted == current:
        return
    try:
        _rewrite(_encoded(current), _encoded(wanted))
    except (OSError, ValueError) as exc:
        click.echo(
            "Warning: the value of a secret-looking -c option stays visible to other users "
            f"in the process list ({exc}): give it in a file or the environment instead "
            "(docs/SECURITY.md)",
            err=True,
        )
        return
    _shown = wanted


def _encoded(argv: Sequence[str]) -> bytes:
    return b"".join(os.fsencode(arg) + b"\0" for arg in argv)


def _rewrite(current: bytes, wanted: bytes) -> None:
    """Write ``wanted`` over this process's argument area, which must hold ``current``."""
    start, end = _argument_area()
    if len(wanted) > end - start:
        raise ValueError("the new arguments are longer than the old")
    with open("/proc/self/mem", "r+b", buffering=0) as mem:
        mem.seek(start)
        area = mem.read(end - start)
        if area[: len(current)] != current or area[len(current) :].strip(b"\0"):
            raise ValueError("the argument area does not hold what this process started with")
        mem.seek(start)
        mem.write(wanted.ljust(end - start, b"\0"))


def _argument_area() -> tuple[int, int]:
    """``arg_start`` and ``arg_end`` of this process (``/proc/self/stat`` fields 48, 49)."""
    with open("/proc/self/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()  # from field 3 on
    return int(fields[48 - 3]), int(fields[49 - 3])
