"""The progress bar of LLM runs and batch polling."""

from __future__ import annotations

from typing import Any


def progress_bar(**kw: Any):
    """A tqdm bar: the notebook widget when ipywidgets is installed, else the text bar."""
    import importlib.util

    if importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.auto import tqdm
    else:
        from tqdm import tqdm
    return tqdm(**kw)
