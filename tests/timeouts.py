"""The client timeout of a test in which some calls must time out and the others must not.

The calls meant to time out get a reply that hangs until the test ends (``Reply(hang=True)`` of the local servers in
``tests/orchestration/conftest.py`` and ``tests/loom_fake_server.py``), so the timeout fires on them however slow the
machine is. Every other call of the same client is answered at once by a local server on loopback and has these
seconds to complete: a few milliseconds of work, so a machine a hundred times slower than usual still leaves room.
A test whose only call hangs may use a shorter timeout (nothing has to complete within it). 2 s was not enough:
under a load average of 25 on two cores, one run of ``test_timeouts_every_time_fail_the_job`` failed (a thread of
the client or of the local server went unscheduled for that long).
"""

from __future__ import annotations

from typing import Final

HANG_TIMEOUT_S: Final = 5.0
