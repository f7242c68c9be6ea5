"""A crash in run_forked's child is the file's answer (resource_limit), not a dump on the caller's stderr.

The caller here enables a fault handler, as pytest does (and ``PYTHONFAULTHANDLER``): a forked child inherits it,
and before the fix it printed "Fatal Python error: Segmentation fault" and the parent's whole stack."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_segfault_in_the_forked_child_prints_no_fault_dump() -> None:
    script = textwrap.dedent(
        f"""
        import faulthandler, sys
        sys.path.insert(0, {str(ROOT)!r})
        faulthandler.enable()
        from extract_fn.formats.base import ExtractRequest
        from extract_fn.workers import run_forked
        from shared.contract import ExtractionError
        try:
            run_forked("tests.hostile_extractors:segfault", b"x", ExtractRequest(format="text"), timeout_s=120,
                       memory_limit_bytes=0, max_output_bytes=1 << 20)
        except ExtractionError as exc:
            print(exc.code.value, exc.message)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("resource_limit "), done.stdout
    assert "SIGSEGV" in done.stdout  # the crash is still reported, as the answer
    assert "Fatal Python error" not in done.stderr
    assert "Current thread" not in done.stderr
