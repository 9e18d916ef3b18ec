"""marimo apps: the mapping of the user's file to the apps' roles and its checks (plain pandas), the apps as
scripts, and in a real browser: an upload through the file input, the column mapping, and a changed control
changing what is shown."""

import contextlib
import io
import runpy
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from marimo_helpers import serve_app

from medeval_kit import agreement, apps
from medeval_kit.errors import DataFileError, SchemaError

ROOT = Path(__file__).resolve().parents[1]
APPS = sorted((ROOT / "notebooks").glob("*_app.py"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SHOTS = ROOT / "runs" / "screenshots"


# --------------------------------------------------------------------------- the user's own file: mapping and checks
def _labels_table(rater_column: str = "who") -> pd.DataFrame:
    """12 cases labelled A/B/tie by three physicians and one LLM, under the user's own column names."""
    rng = np.random.default_rng(1)
    truth = rng.choice(["A", "B", "tie"], size=12, p=[0.45, 0.45, 0.1])
    rows = []
    for who, kind, noise in [("dr_lee", "human", 0.2), ("dr_kim", "human", 0.3), ("dr_roy", "human", 0.25),
                             ("gpt-x", "llm", 0.4)]:
        for i, t in enumerate(truth):
            lab = t if rng.random() > noise else rng.choice(["A", "B", "tie"])
            rows.append({"case_id": f"c{i:02d}", rater_column: who, "verdict": str(lab), "annotator_type": kind})
    return pd.DataFrame(rows)


def _judgments_table() -> pd.DataFrame:
    """Six pairs judged in both orders by 'my-judge': p0-p2 keep their verdict, p3-p5 flip (A shown first wins)."""
    rows = []
    for i in range(6):
        ab, ba = ("A", "A") if i < 3 else ("A", "B")
        rows += [{"pair_id": f"p{i}", "judge_model": "my-judge", "order": "AB", "winner": ab},
                 {"pair_id": f"p{i}", "judge_model": "my-judge", "order": "BA", "winner": ba}]
    return pd.DataFrame(rows)


def _rounds_table() -> pd.DataFrame:
    """Two items refined over 2 and 3 rounds, two components each, scores as 'x/y' strings."""
    rows = []
    traces = {"q1": [(12, 15), (18, 19)], "q2": [(10, 10), (14, 13), (20, 19)]}
    for item, scores in traces.items():
        for k, (q, a) in enumerate(scores, start=1):
            rows += [{"item": item, "iteration": k, "component": "question", "score": f"{q}/20"},
                     {"item": item, "iteration": k, "component": "answer", "score": f"{a}/20"}]
    return pd.DataFrame(rows)


def _csv_bytes(df: pd.DataFrame, sep: str = ",") -> bytes:
    return df.to_csv(index=False, sep=sep).encode()


def test_guess_mapping_exact_alias_and_similar_names():
    g = apps.guess_mapping(["case_id", "Annotator Name", "verdict", "annotator_type", "notes"], "agreement")
    # alias (case_id), similar name (annotatorname ~ annotator, ratio 0.82), alias (verdict, annotator_type)
    assert g == {"item": "case_id", "rater": "Annotator Name", "label": "verdict", "rater_kind": "annotator_type",
                 "criterion": None}
    # the exact name wins over an alias of the same role and is never taken twice
    g = apps.guess_mapping(["label", "verdict", "item", "rater"], "agreement")
    assert g["label"] == "label" and list(g.values()).count("label") == 1
    # an exact column of another role is not taken by a similar name: 'judge' stays the judgments' judge
    g = apps.guess_mapping(["pair_id", "judge", "order", "winner", "slot_verdict"], "judgments")
    assert (g["item"], g["judge"], g["order"], g["verdict"]) == ("pair_id", "judge", "order", "winner")
    g = apps.guess_mapping(["item", "iteration", "component", "points", "max"], "rounds")
    assert (g["round"], g["score"], g["max_score"]) == ("iteration", "points", "max")
    assert g["stop"] is None and g["best"] is None


def test_mapping_errors_name_the_role_the_file_and_the_columns():
    cols = ["case_id", "who", "verdict"]
    with pytest.raises(SchemaError) as e:
        apps.check_mapping(cols, {"item": "case_id", "rater": None, "label": "verdict"}, "agreement", source="mine.csv")
    msg = str(e.value)
    assert msg.startswith("mine.csv: ") and "'rater'" in msg and "'rater column'" in msg and "'who'" in msg
    with pytest.raises(SchemaError, match="'case_id' is chosen for both 'item' and 'rater'"):
        apps.check_mapping(cols, {"item": "case_id", "rater": "case_id", "label": "verdict"}, "agreement")
    with pytest.raises(SchemaError, match="'grade' .*is not in the file"):
        apps.check_mapping(cols, {"item": "case_id", "rater": "who", "label": "grade"}, "agreement")
    assert apps.check_mapping(cols, {"item": "case_id", "rater": "who", "label": "verdict", "rater_kind": None},
                              "agreement") == {"item": "case_id", "rater": "who", "label": "verdict"}


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl", ".json", ".parquet"])
def test_read_upload_reads_what_read_table_reads(suffix):
    df = _labels_table()
    if suffix in (".csv", ".tsv"):
        data = _csv_bytes(df, "\t" if suffix == ".tsv" else ",")
    elif suffix == ".jsonl":
        data = df.to_json(orient="records", lines=True).encode()
    elif suffix == ".json":
        data = df.to_json(orient="records").encode()
    else:
        buf = io.BytesIO()
        df.to_parquet(buf)
        data = buf.getvalue()
    got = apps.read_upload(f"labels{suffix}", data)
    assert list(got.columns) == list(df.columns) and len(got) == len(df)
    assert got["verdict"].tolist() == df["verdict"].tolist()


def test_read_upload_errors_name_the_uploaded_file_not_a_temporary_path():
    with pytest.raises(DataFileError) as e:
        apps.read_upload("labels.xlsx", b"whatever")
    assert str(e.value).startswith("labels.xlsx: unknown file type '.xlsx'") and "/tmp" not in str(e.value)
    with pytest.raises(DataFileError, match=r"^header_only\.csv: .*no rows"):
        apps.read_upload("header_only.csv", b"item,rater,label\n")
    with pytest.raises(DataFileError, match=r"^broken\.jsonl: line 2 is not valid JSON"):
        apps.read_upload("broken.jsonl", b'{"item": 1}\n{"item": \n')

    class Upload:  # what mo.ui.file's value holds
        name, contents = "broken.jsonl", b'{"item": 1}\n{"item": \n'

    table, source, problem = apps.app_table("agreement", [Upload()], "pandalm")
    assert table is None and source == "broken.jsonl" and problem.startswith("broken.jsonl: line 2")


def test_bundled_data_is_the_default_and_keeps_its_numbers():
    table, source, problem = apps.app_table("agreement", [], "pandalm")
    assert problem == "" and "pandalm" in source
    ann, humans, notes = apps.annotations_from_table(table, apps.guess_mapping(table.columns, "agreement"),
                                                     source=source)
    assert humans == ["annotator1", "annotator2", "annotator3"] and notes == []
    pairs = agreement.pairwise_matrix(ann, metric="cohen_kappa", n_boot=0)
    assert pairs["estimate"].mean() == pytest.approx(0.577, abs=0.001)  # as the app showed before the upload step
    raw = apps.load_rounds_for_app("all")
    traces = apps.rounds_from_table(raw, apps.guess_mapping(raw.columns, "rounds"), source="bundled")
    for item in sorted(raw["item"].unique())[:5]:
        pd.testing.assert_frame_equal(apps.round_trajectory(raw, item), apps.round_trajectory(traces, item))


def test_annotations_from_the_users_columns_equal_the_tidy_ones():
    t = _labels_table()
    mapping = apps.guess_mapping(t.columns, "agreement")
    assert mapping["rater"] is None  # 'who' is no known name: the app asks for it
    mapping["rater"] = "who"
    ann, humans, _ = apps.annotations_from_table(t, mapping, source="mine.csv")
    assert humans == ["dr_kim", "dr_lee", "dr_roy"]
    tidy = t.rename(columns={"case_id": "item", "who": "rater", "verdict": "label"})
    ours = agreement.pairwise_matrix(ann, n_boot=0)["estimate"].to_numpy()
    ref = agreement.pairwise_matrix(tidy, n_boot=0)["estimate"].to_numpy()
    np.testing.assert_allclose(ours, ref)


def test_bad_annotation_files_name_the_users_column_and_rows():
    t = _labels_table()
    m = {"item": "case_id", "rater": "who", "label": "verdict", "rater_kind": "annotator_type"}
    dup = pd.concat([t, t.iloc[[5]]], ignore_index=True)
    with pytest.raises(SchemaError) as e:
        apps.annotations_from_table(dup, m, source="mine.csv")
    assert "column 'case_id,who'" in str(e.value) and "rows [5, 48]" in str(e.value)
    bad = t.assign(annotator_type=t["annotator_type"].replace({"llm": "robot"}))
    with pytest.raises(SchemaError) as e:
        apps.annotations_from_table(bad, m, source="mine.csv")
    assert str(e.value).startswith("mine.csv: table 'annotations', column 'annotator_type', rows [36, 37")
    assert "'robot'" in str(e.value)
    empty = t.assign(who=t["who"].where(t.index != 7))
    with pytest.raises(SchemaError, match=r"mine\.csv: .*column 'who', rows \[7\]"):
        apps.annotations_from_table(empty, m, source="mine.csv")
    msg = apps.attempt(apps.annotations_from_table, bad, m, source="mine.csv")[1]
    assert msg.startswith("mine.csv:") and "annotator_type" in msg


def test_judgments_in_model_or_slot_terms_give_the_same_flips():
    t = _judgments_table()
    m = apps.guess_mapping(t.columns, "judgments")
    d = apps.judgments_from_table(t, m, source="mine.csv")
    f = apps.flip_table(d, judge="my-judge", criterion="overall")
    assert len(f) == 6 and int(f["flip"].sum()) == 3
    # the same calls with the presented slot that won: AB+A = first, BA+A = second, BA+B = first
    slots = t.assign(winner=[{("AB", "A"): "first", ("BA", "A"): "second", ("BA", "B"): "first"}[(o, w)]
                             for o, w in zip(t["order"], t["winner"])])
    d2 = apps.judgments_from_table(slots, m, source="mine.csv")
    assert d2["verdict"].tolist() == d["verdict"].tolist()
    ps = apps.position_summary(d, judge="my-judge", criterion="overall", n_boot=0).set_index("metric")
    assert ps.loc["flip_rate", "estimate"] == pytest.approx(0.5) and ps.loc["flip_rate", "n_items"] == 6
    # 9 of 12 calls chose the slot shown first (3 consistent pairs: 1 of 2 each; 3 flips: 2 of 2 each)
    assert ps.loc["first_slot_rate", "estimate"] == pytest.approx(9 / 12)


def test_judgment_failures_are_counted_never_ties_and_unknown_verdicts_are_located():
    t = _judgments_table()
    t.loc[3, "winner"] = "ERROR"
    t.loc[6, "winner"] = ""
    m = apps.guess_mapping(t.columns, "judgments")
    assert apps.unknown_verdicts(t, "winner") == ["ERROR"]
    with pytest.raises(SchemaError) as e:
        apps.judgments_from_table(t, m, source="mine.csv")
    msg = str(e.value)
    assert msg.startswith("mine.csv: table 'judgments', column 'winner', rows [3] (1 in all): "
                          "unknown verdict(s) ['ERROR']")
    assert "failed parse" in msg
    d = apps.judgments_from_table(t, m, source="mine.csv", failed=["ERROR"])
    assert d["parse_status"].tolist().count("failed") == 2 and d.loc[[3, 6], "verdict"].isna().all()
    f = apps.flip_table(d, judge="my-judge", criterion="overall")
    assert int(f["n_failed"].sum()) == 2 and int(f["flip"].sum()) == 2  # p1 (failed) and p3 (failed) not flips
    # a parse-status column other than 'ok' is a failure too; verdicts of both kinds in one column are refused
    t = _judgments_table().assign(status=["ok"] * 11 + ["unparsed"])
    d = apps.judgments_from_table(t, apps.guess_mapping(t.columns, "judgments"))
    assert d.loc[11, "parse_status"] == "failed" and d.loc[11, "verdict"] is None
    mixed = _judgments_table().assign(winner=["A", "first"] + ["A"] * 10)
    with pytest.raises(SchemaError, match=r"column 'winner', rows \[1\] .*mixes model terms"):
        apps.judgments_from_table(mixed, apps.guess_mapping(mixed.columns, "judgments"))


def test_judgment_orders_and_swaps_are_checked_in_the_users_terms():
    t = _judgments_table().rename(columns={"order": "shown"})
    m = apps.guess_mapping(t.columns, "judgments")
    assert m["order"] is None
    with pytest.raises(SchemaError, match="no column is chosen for 'order'"):
        apps.judgments_from_table(t, m, source="mine.csv")
    m["order"] = "shown"
    bad = t.assign(shown=t["shown"].replace({"BA": "reversed"}))
    with pytest.raises(SchemaError, match=r"column 'shown', rows \[1, 3, 5, 7, 9, 11\].*AB .*or BA"):
        apps.judgments_from_table(bad, m, source="mine.csv")
    with pytest.raises(SchemaError) as e:  # p5 shown only in one order: bias.check_pairwise's error, our names
        apps.judgments_from_table(t.drop(index=11), m, source="mine.csv")
    assert "column 'shown'" in str(e.value) and "order without its swap" in str(e.value)


def test_rounds_from_score_strings_and_defaults():
    t = _rounds_table()
    m = apps.guess_mapping(t.columns, "rounds")
    assert (m["round"], m["score"], m["max_score"]) == ("iteration", "score", None)
    r = apps.rounds_from_table(t, m, source="mine.csv")
    traj = apps.round_trajectory(r, "q2")
    # q2 round 3: question 20/20 and answer 19/20 -> total (1.0 + 0.95) / 2 = 0.975
    assert traj["total"].round(3).tolist() == [0.5, 0.675, 0.975]
    assert traj["stop"].tolist() == [False, False, True]  # no stop column: the last round
    assert traj["best"].tolist() == [False, False, True]  # no best column: the highest total
    # all components >= 0.9 first holds in round 3 for q2; at 0.5 already in round 1
    assert apps.rule_stop(r, "q2", "all_components", 0.9) == (3, "rule")
    assert apps.rule_stop(r, "q2", "all_components", 0.5) == (1, "rule")
    assert apps.rule_stop(r, "q1", "all_components", 0.99) == (2, "end_of_trace")
    assert apps.round_rows(r, "q1", "answer")["raw_score"].tolist() == ["15/20", "19/20"]


def test_bad_rounds_files_name_the_users_column_and_rows():
    t = _rounds_table()
    m = apps.guess_mapping(t.columns, "rounds")
    bad = t.astype({"iteration": object})
    bad.loc[4, "iteration"] = "two"
    with pytest.raises(SchemaError) as e:
        apps.rounds_from_table(bad, m, source="mine.csv")
    assert str(e.value) == ("mine.csv: table 'rounds', column 'iteration', rows [4] (1 in all): "
                            "expected whole numbers, found 'two'")
    points = t.assign(score=[int(s.split("/")[0]) for s in t["score"]]).rename(columns={"score": "points"})
    m2 = apps.guess_mapping(points.columns, "rounds")
    with pytest.raises(SchemaError, match=r"column 'points', rows \[0, 1, .*choose a 'max_score column'"):
        apps.rounds_from_table(points, m2, source="mine.csv")
    r = apps.rounds_from_table(points.assign(out_of=20), apps.guess_mapping([*points.columns, "out_of"], "rounds"))
    assert r["max_score"].eq(20).all()
    dup = pd.concat([t, t.iloc[[0]]], ignore_index=True)
    with pytest.raises(SchemaError, match=r"column 'item,iteration,component,aspect', rows \[0, 10\]"):
        apps.rounds_from_table(dup, m, source="mine.csv")
    with pytest.raises(SchemaError, match=r"column 'done', rows \[0\].*True/False"):
        apps.rounds_from_table(t.assign(done=["maybe"] + ["no"] * 9), {**m, "stop": "done"}, source="mine.csv")
    # an unparsable score is a failed parse, kept with its text
    odd = t.assign(score=t["score"].where(t.index != 2, "n/a"))
    r = apps.rounds_from_table(odd, m, source="mine.csv")
    assert r.loc[2, "parse_status"] == "failed" and np.isnan(r.loc[2, "score"]) and r.loc[2, "raw_score"] == "n/a"


# --------------------------------------------------------------------------- scripts and browser
def test_apps_exist():
    assert {p.name for p in APPS} >= {"agreement_app.py", "judgments_app.py", "rounds_app.py"}


@pytest.mark.parametrize("app", APPS, ids=lambda p: p.name)
def test_app_runs_as_a_script(app, monkeypatch, capsys):
    """``python notebooks/<app>.py`` runs the app and prints a summary. Run here as Python runs a script (``__name__``
    is ``"__main__"``, argv is the file, its folder first on sys.path, the checkout the working directory), without
    a new interpreter; test_apps_cli runs an app as a real process, where the exit status and stderr are checked."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "argv", [str(app)])
    monkeypatch.syspath_prepend(str(app.parent))
    try:
        runpy.run_path(str(app), run_name="__main__")
    except SystemExit as exc:  # the exit status a process would have had
        assert exc.code in (None, 0), f"{app.name} exited with status {exc.code}"
    assert capsys.readouterr().out.strip(), f"{app.name} printed nothing in script mode"


@pytest.fixture(scope="module")
def app_servers():
    """`marimo run --headless` of each app on 127.0.0.1, started on first use and shared by this module's browser
    tests: every page opened on it gets its own marimo session (its own kernel), so no test sees another test's
    upload or control change. Returns app path -> URL."""
    with contextlib.ExitStack() as stack:
        urls: dict[Path, str] = {}

        def url(app: Path) -> str:
            if app not in urls:
                urls[app] = stack.enter_context(serve_app(app))
            return urls[app]

        yield url


@pytest.fixture()
def served(request, app_servers):
    """The URL of the app ``request.param``, served by the module's server of that app."""
    return app_servers(request.param)


@pytest.fixture(scope="module")
def browser():
    """One headless chromium for this module's browser tests; each test opens its own pages (``new_page``)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = _browser(p)
        yield b
        b.close()


@pytest.fixture()
def new_page(browser):
    """``new_page(viewport)``: a page in a fresh browser context (no cookies or storage from another test), closed
    after the test."""
    contexts = []

    def make(viewport: dict):
        contexts.append(browser.new_context(viewport=viewport))
        return contexts[-1].new_page()

    yield make
    for c in contexts:
        c.close()


def _settle(page, quiet_ms: int = 1000, timeout: int = 30_000) -> None:
    """Before a screenshot: wait until no output has been stale or loading for ``quiet_ms`` (the figure cells have
    re-rendered). The screenshot is for a person to look at, not checked: a timeout only means an earlier picture."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.evaluate("() => { window.__medevalBusy = performance.now(); }")
    try:
        page.wait_for_function(
            "quiet => { const now = performance.now();"
            " if (document.querySelector('.marimo-output-stale, .marimo-output-loading')) window.__medevalBusy = now;"
            " return now - window.__medevalBusy >= quiet; }",
            arg=quiet_ms, polling=100, timeout=timeout)
    except PlaywrightTimeout:
        pass


def _browser(p):
    return p.chromium.launch(
        executable_path=CHROMIUM,
        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
              "--disable-sync", "--no-first-run", "--disable-quic"],
    )


needs_browser = pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (apt-get install chromium)")


def _wait_text(page, element_id: str, expected: str, timeout: int = 120_000) -> None:
    """Wait until the element with this id shows exactly ``expected``."""
    page.wait_for_function(
        "([id, want]) => { const e = document.getElementById(id); return !!e && e.innerText.trim() === want; }",
        arg=[element_id, expected], timeout=timeout,
    )


def _upload(page, path: Path) -> None:
    """Put ``path`` into the app's file input (as a user's pick would) and wait until the app reads it."""
    page.locator("input[type=file]").set_input_files(str(path))
    _wait_text(page, "data-source", path.name)


def _problem(page, text: str) -> str:
    """Wait for the red callout holding ``text``; return its whole message."""
    box = page.locator(".medeval-problem").filter(has_text=text)
    box.wait_for(timeout=120_000)
    return box.inner_text()


def _number_changes_with_a_dropdown(page, number_id: str, label: str) -> None:
    """Pick other options of the labelled dropdown, in order, until the number with this id changes."""
    number = page.locator(f"#{number_id}")
    number.wait_for(timeout=120_000)
    before = number.inner_text()
    select = page.get_by_label(label, exact=True)
    current = select.input_value()
    changed = False
    for opt in [o for o in select.locator("option").all_inner_texts() if o.strip() and o != current][:6]:
        select.select_option(label=opt)
        try:
            page.wait_for_function(
                "([id, before]) => { const e = document.getElementById(id); return e && e.innerText !== before; }",
                arg=[number_id, before], timeout=15_000,
            )
            changed = True
            break
        except Exception:  # same number for this option: try the next
            continue
    _settle(page)
    page.screenshot(path=str(SHOTS / f"{number_id}.png"), full_page=True)
    after = number.inner_text()
    assert changed and before != after, f"#{number_id} stayed {before!r} for every option of {label!r} tried"


# One page per app walks through the bundled data and then an upload: each page is a marimo session of its own
# (a kernel process that imports the toolkit and runs every cell) and a page load in chromium.
@needs_browser
@pytest.mark.browser
@pytest.mark.xdist_group("apps_agreement_app")
@pytest.mark.parametrize("served", [ROOT / "notebooks" / "agreement_app.py"], indirect=True, ids=["agreement"])
def test_agreement_app_changes_with_the_metric_then_takes_an_upload_and_its_column_mapping(served, tmp_path,
                                                                                           new_page):
    """The bundled PandaLM panel's mean pairwise kappa changes with the metric. Then a CSV whose rater column has
    an unknown name: the app asks for it; once mapped, the numbers are the file's, and the metric dropdown changes
    them."""
    path = tmp_path / "my_labels.csv"
    t = _labels_table()
    t.to_csv(path, index=False)
    ann, _, _ = apps.annotations_from_table(t, {"item": "case_id", "rater": "who", "label": "verdict",
                                                "rater_kind": "annotator_type"})
    want = {m: f"{agreement.pairwise_matrix(ann, metric=m, n_boot=0)['estimate'].mean():.3f}"
            for m in ("cohen_kappa", "gwet_ac1")}
    assert want["cohen_kappa"] != want["gwet_ac1"]
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = new_page({"width": 1300, "height": 1600})
    page.goto(served)
    number = page.locator("#mean-pairwise")
    number.wait_for(timeout=120_000)
    bundled = number.inner_text()
    assert float(bundled) == pytest.approx(0.577, abs=0.01)  # mean pairwise Cohen's kappa, PandaLM, 5 raters
    metric = page.get_by_label("metric", exact=True)
    metric.select_option("gwet_ac1")
    page.wait_for_function(
        "before => { const e = document.querySelector('#mean-pairwise'); return e && e.innerText !== before; }",
        arg=bundled, timeout=120_000,
    )
    _settle(page)  # let the dependent figure cells re-render before the screenshot
    page.screenshot(path=str(SHOTS / "agreement_app.png"), full_page=True)

    _upload(page, path)
    problem = _problem(page, "no column is chosen for 'rater'")
    page.get_by_label("rater column", exact=True).select_option("who")
    _wait_text(page, "n-pairs", "6")  # 4 raters
    chosen = metric.input_value()  # the metric picked before the upload, unless the upload reset it
    _wait_text(page, "mean-pairwise", want[chosen])
    other = "cohen_kappa" if chosen == "gwet_ac1" else "gwet_ac1"
    metric.select_option(other)
    _wait_text(page, "mean-pairwise", want[other])
    _settle(page)  # let the figures re-render before the screenshot
    page.screenshot(path=str(SHOTS / "agreement_app_upload.png"), full_page=True)
    assert problem.startswith("my_labels.csv: ") and "'who'" in problem  # names the file and offers the columns


@needs_browser
@pytest.mark.browser
@pytest.mark.xdist_group("apps_judgments_app")
@pytest.mark.parametrize("served", [ROOT / "notebooks" / "judgments_app.py"], indirect=True, ids=["judgments"])
def test_judgments_app_changes_with_the_bundled_data_then_takes_an_upload_and_filters_the_flips(served, tmp_path,
                                                                                                new_page):
    """The number of flips changes with the bundled dataset. Then judgments whose columns are guessed (pair_id,
    judge_model, order, winner): 3 of 6 pairs flip; ticking 'only position flips' shows those 3."""
    path = tmp_path / "my_judgments.csv"
    _judgments_table().to_csv(path, index=False)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = new_page({"width": 1300, "height": 1600})
    page.goto(served)
    _number_changes_with_a_dropdown(page, "n-flips", "bundled data (used when no file is uploaded)")
    _upload(page, path)
    _wait_text(page, "n-flips", "3")
    _wait_text(page, "n-shown", "6")
    page.get_by_role("checkbox", name="only position flips").check()
    _wait_text(page, "n-shown", "3")
    _settle(page)
    page.screenshot(path=str(SHOTS / "judgments_app_upload.png"), full_page=True)


@needs_browser
@pytest.mark.browser
@pytest.mark.xdist_group("apps_rounds_app")
@pytest.mark.parametrize("served", [ROOT / "notebooks" / "rounds_app.py"], indirect=True, ids=["rounds"])
def test_rounds_app_changes_with_the_item_then_reports_a_bad_file_and_takes_a_good_one(served, tmp_path, new_page):
    """The final total changes with the item picked. Then a rounds file with a round 'two' gets a message naming
    the file, the column and the row; the good file shows its totals, and the threshold slider moves the round a
    stopping rule stops at."""
    bad, good = tmp_path / "bad_rounds.csv", tmp_path / "my_rounds.csv"
    t = _rounds_table()
    t.astype({"iteration": object}).assign(iteration=lambda d: d["iteration"].where(d.index != 4, "two")).to_csv(
        bad, index=False)
    t.to_csv(good, index=False)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = new_page({"width": 1300, "height": 1600})
    page.goto(served)
    _number_changes_with_a_dropdown(page, "final-total", "item")
    _upload(page, bad)
    problem = _problem(page, "expected whole numbers")
    _upload(page, good)
    _wait_text(page, "final-total", "0.975")  # q2, round 3: (20/20 + 19/20) / 2
    _wait_text(page, "rule-stop", "3")  # all components >= 0.9 first in round 3
    page.get_by_role("slider").first.focus()
    page.keyboard.press("Home")  # threshold 0.5: round 1 (10/20 and 10/20) already meets it
    _wait_text(page, "rule-stop", "1")
    _settle(page)
    page.screenshot(path=str(SHOTS / "rounds_app_upload.png"), full_page=True)
    assert problem.startswith("bad_rounds.csv: table 'rounds', column 'iteration', rows [4]")
