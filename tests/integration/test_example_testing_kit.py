"""examples/testing_kit.py stays a working example: its tests run here."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import testing_kit  # noqa: E402 - the example, imported as its users run it

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def test_feed_and_capture_example() -> None:
    testing_kit.test_feed_while_running_and_capture_per_stream()


def test_simulated_time_example() -> None:
    testing_kit.test_a_tick_every_minute_without_waiting_a_minute()
