"""Build a thin papermill notebook from (markdown, code) pairs: `python tools/nbbuild.py` is not needed;
import `build` from here in a one-off script. Kept so that notebooks are written the same way."""

from __future__ import annotations

import nbformat


def build(path: str, title: str, parameters: str, cells: list[tuple[str, str]]) -> None:
    """Write a notebook: title, one `parameters` cell, then a markdown heading + code cell per pair."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells.append(nbformat.v4.new_markdown_cell(title))
    p = nbformat.v4.new_code_cell(parameters.strip())
    p.metadata["tags"] = ["parameters"]
    nb.cells.append(p)
    for md, code in cells:
        if md:
            nb.cells.append(nbformat.v4.new_markdown_cell(md.strip()))
        if code:
            nb.cells.append(nbformat.v4.new_code_cell(code.strip()))
    for i, c in enumerate(nb.cells):
        c["id"] = f"cell-{i:02d}"
    nbformat.write(nb, path)
