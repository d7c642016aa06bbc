"""The ``sparkstorm`` command line: a click group with one module per command."""
