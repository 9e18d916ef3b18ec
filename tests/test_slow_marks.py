"""`make test-fast` skips the files and tests that tests/conftest.py names slow: each name must exist."""

from __future__ import annotations

from pathlib import Path

from conftest import SLOW_FILES, SLOW_TESTS

HERE = Path(__file__).parent


def test_every_slow_file_and_test_exists():
    assert sorted(f for f in SLOW_FILES if not (HERE / f).exists()) == []
    missing = [e for e in sorted(SLOW_TESTS)
               if f"def {e.split('::')[1]}(" not in (HERE / e.split("::")[0]).read_text(encoding="utf-8")]
    assert missing == []
