"""Parallel notebook runs share the cores: every thread pool of a kernel gets cores / jobs threads."""

from __future__ import annotations

import os

from medeval_kit.cli import runner


def test_share_cores_sets_every_pool_unless_the_user_did(monkeypatch):
    for name in runner.THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "7")
    share = str(max(1, (os.cpu_count() or 1) // 2))
    assert runner.share_cores(2) == share
    assert {n: os.environ[n] for n in runner.THREAD_VARIABLES} == {
        "MEDEVAL_LOCAL_THREADS": share, "OMP_NUM_THREADS": share, "OPENBLAS_NUM_THREADS": "7", "MKL_NUM_THREADS": share}
    assert "NUMBA_NUM_THREADS" not in runner.THREAD_VARIABLES  # the aspect search keeps its cores
