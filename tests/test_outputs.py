"""Tables (CSV/Markdown/LaTeX) and figures (PDF/PNG/SVG + sidecar) are written, valid and byte-stable."""

import json

import numpy as np
import pandas as pd

from medeval_kit.viz import figure, save_figure
from medeval_kit.tables import save_table


def test_save_table_three_formats(tmp_path):
    df = pd.DataFrame({"metric": ["kappa"], "estimate": [0.123456], "n_items": [10]})
    paths = save_table(df, "t", tmp_path, caption="A caption")
    assert pd.read_csv(paths["csv"])["estimate"].iloc[0] == 0.123456
    assert "| kappa" in paths["md"].read_text() and "0.123" in paths["md"].read_text()
    tex = paths["tex"].read_text()
    assert "\\begin{table}" in tex and "\\caption{A caption}" in tex


def test_save_figure_formats_sidecar_and_stability(tmp_path):
    def make():
        fig, ax = figure("single")
        ax.plot(np.arange(5), np.arange(5) ** 2)
        return fig

    data = pd.DataFrame({"x": range(5)})
    p1 = save_figure(make(), "f", tmp_path / "a", data=data, meta={"study": "s", "parameters": {"k": 1}})
    p2 = save_figure(make(), "f", tmp_path / "b", data=data, meta={"study": "s", "parameters": {"k": 1}})
    assert p1["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert p1["pdf"].read_bytes()[:5] == b"%PDF-"
    assert b"<svg" in p1["svg"].read_bytes()[:500]
    side = json.loads(p1["json"].read_text())
    assert side["study"] == "s" and side["parameters"] == {"k": 1} and len(side["data_hash"]) == 16
    for fmt in ("pdf", "png", "svg"):
        assert p1[fmt].read_bytes() == p2[fmt].read_bytes(), f"{fmt} output is not byte-stable"
    from PIL import Image
    with Image.open(p1["png"]) as im:
        assert round(im.info["dpi"][0]) == 300


def test_save_plotly_cdn_and_offline(tmp_path):
    import plotly.graph_objects as go

    from medeval_kit.viz import save_plotly

    fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))
    small = save_plotly(fig, "p", tmp_path / "cdn", meta={"study": "s"})
    full = save_plotly(fig, "p", tmp_path / "offline", offline=True)
    cdn_html, off_html = small["html"].read_text(), full["html"].read_text()
    assert 'src="https://cdn.plot.ly' in cdn_html and len(cdn_html) < 100_000
    assert 'src="https://cdn.plot.ly' not in off_html and len(off_html) > 1_000_000  # plotly.js embedded
    assert json.loads(small["json"].read_text())["kind"] == "plotly"


def test_every_saved_figure_has_all_formats_and_a_valid_sidecar():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "figures"
    sidecars = [p for p in root.glob("*/*.json")]
    assert sidecars, "no figures: run `make figures`"
    for side in sidecars:
        meta = json.loads(side.read_text())
        assert meta["figure"] == side.stem
        for name in meta["files"]:
            f = side.parent / name
            assert f.exists() and f.stat().st_size > 0, f
        if meta.get("kind") != "plotly":
            assert {Path(n).suffix for n in meta["files"]} == {".pdf", ".png", ".svg"}, side
            assert "study" in meta and "parameters" in meta, f"{side}: sidecar lacks study/parameters"


def test_markdown_cells_cannot_break_the_table_or_inject_html(tmp_path):
    # Issue 13: model replies with "|" and newlines broke Markdown tables; raw HTML passed through.
    df = pd.DataFrame({"reply": ['{"verdict": "A"} | or B', "line 1\nline 2", "<script>x</script> & co"],
                       "n": [1, 2, 3]})
    md = save_table(df, "replies", tmp_path)["md"].read_text().splitlines()
    assert len(md) == 2 + len(df)  # header, rule, one line per row
    assert all(line.count(" | ") + line.count("|:") + line.count(":|") >= 1 for line in md)
    body = "\n".join(md[2:])
    assert "\\|" in body and "<br>" in body and "<script>" not in body and "&lt;script&gt;" in body
    assert pd.read_csv(tmp_path / "replies.csv")["reply"].tolist() == df["reply"].tolist()  # CSV keeps the text
