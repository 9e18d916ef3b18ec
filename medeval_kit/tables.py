"""Save result tables as CSV, Markdown and LaTeX side by side."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

__all__ = ["save_table"]


def save_table(
    df: pd.DataFrame,
    name: str,
    outdir: str | Path,
    *,
    caption: str | None = None,
    float_format: str = "{:.3f}",
    index: bool = False,
) -> dict[str, Path]:
    r"""Write ``df`` to ``outdir/name.{csv,md,tex}``; return the paths by format.

    The CSV keeps full precision; Markdown and LaTeX round floats with ``float_format``. In Markdown,
    text cells are made safe: HTML in the data is escaped, ``|`` becomes ``\|`` and line breaks
    become ``<br>``, so a model reply can never break the table or inject markup.

    >>> import pandas as pd, tempfile
    >>> paths = save_table(pd.DataFrame({"x": [1.23456]}), "t", tempfile.mkdtemp())
    >>> sorted(paths)
    ['csv', 'md', 'tex']
    """
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"csv": out / f"{name}.csv", "md": out / f"{name}.md", "tex": out / f"{name}.tex"}
    df.to_csv(paths["csv"], index=index)
    shown = df.copy()
    for col in shown.columns:
        if pd.api.types.is_float_dtype(shown[col].dtype):
            shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else float_format.format(v))
    md = _markdown_safe(shown).to_markdown(index=index)
    if caption:
        md = f"{caption}\n\n{md}"
    paths["md"].write_text(md + "\n")
    paths["tex"].write_text(
        shown.to_latex(index=index, caption=caption, label=f"tab:{name}", escape=True) + "\n"
    )
    return paths


def _md_cell(v):
    if not isinstance(v, str):
        return v
    v = html.escape(v, quote=False).replace("|", "\\|")
    return v.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br>")


def _markdown_safe(df: pd.DataFrame) -> pd.DataFrame:
    """Text cells escaped for a Markdown table (see :func:`save_table`)."""
    out = df.copy()
    for col in out.columns:
        if not pd.api.types.is_numeric_dtype(out[col].dtype):
            out[col] = out[col].map(_md_cell)
    out.columns = [_md_cell(str(c)) for c in out.columns]
    return out
