"""Text from hostile input (a savepoint's fields, a restored key) as it may be shown on a
terminal: every character that is not printable shown escaped (pure).

A terminal acts on what it is sent: ESC starts sequences that move the cursor, clear the
screen, set the window title or colours; C1 controls (``\\x9b`` is a one-byte CSI on some
terminals), bidirectional overrides (``\\u202e``) and line separators change what a line
appears to say.  :func:`printable` leaves printable text as it is and shows every other
character as Python writes it in a string literal (``\\x1b``, ``\\u202e``, ``\\n``).
"""

from __future__ import annotations


def printable(text: str) -> str:
    """``text`` with every non-printable character (``str.isprintable``: control, format,
    separator other than a space, unassigned and surrogate characters) escaped.

    >>> printable("wc\\x1b[2J\\u202etxt.exe")
    'wc\\\\x1b[2J\\\\u202etxt.exe'
    >>> printable("plain: ünïcode, tab\\there")
    'plain: ünïcode, tab\\\\there'
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
