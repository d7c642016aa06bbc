"""Settings shared by every tier.

Property-based tests (hypothesis) run derandomized by default: the same examples on every
run, so CI is repeatable.  ``SPARKSTORM_FUZZ_EXAMPLES=N`` runs them with fresh random
examples, ``N`` per test (docs/SECURITY.md, "How it is checked")."""

from __future__ import annotations

import os

from hypothesis import settings

#: Examples per property test in a longer, random run (unset: the derandomized CI run).
FUZZ_EXAMPLES = os.environ.get("SPARKSTORM_FUZZ_EXAMPLES")

settings.register_profile("ci", derandomize=True, max_examples=100, print_blob=True)
settings.register_profile(
    "long", derandomize=False, max_examples=int(FUZZ_EXAMPLES or 1000), print_blob=True
)
settings.load_profile("long" if FUZZ_EXAMPLES else "ci")
