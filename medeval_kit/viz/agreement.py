"""Plots of agreement results (filled in by the move of plots out of the analysis modules)."""

__all__: list[str] = []
