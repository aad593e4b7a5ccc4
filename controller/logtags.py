"""Fixed tags in the node's log lines that people and tests search for.

``UNEXPECTED`` starts every log line of an exception nobody expected (``log.exception("%s ...", UNEXPECTED)``):
the test suite fails any test during which one is logged, so a swallowed bug cannot hide behind a passing
test. Defined once here so that the tag the code writes and the tag the tests look for cannot drift apart.
"""

from __future__ import annotations

from typing import Final

UNEXPECTED: Final = "BK-UNEXPECTED"
