"""MCQG-SRefine Stage 0 (mcqg-srefine-2025, Section 2.1): topics and test points for a clinical case.

1. **Topic selection**: the LLM picks at most 5 topics from the 41-topic NBME checklist
   (``data/medqg/stage0/nbme_topics.yaml``). With ``constrained=True`` the reply is a JSON array
   whose items are an enum of the checklist (grammar-constrained with the local model); without
   it, every returned topic is matched to the checklist after normalization, and topics that are
   not on it are kept as ``status="off_list"`` rows and counted, never used.
2. **Test-point writing**: the case and each topic query a retriever over the 18-section USMLE
   Content Outline (``data/medqg/stage0/usmle_outline.yaml``); the LLM writes the test point from
   the retrieved concepts or from the case. The paper retrieves with ColBERT, which is not
   available offline: we use :class:`~medeval_kit.retrieve.Retriever` (BM25), and our outline
   holds a condensed concept list per section (see that file's header).

:func:`machine_triplets` runs both and returns (note, topic, test point) triplets for
:func:`~medeval_kit.generate.run_srefine` (``topics="machine"``); :func:`topic_overlap` compares
machine topics and test points with the human ones of the same notes, with cluster-bootstrap CIs.
"""

from __future__ import annotations

import difflib
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.generate._common import (
    DEFAULT_MODEL,
    GenerationError,
    cached_retriever,
    legacy_keywords,
    resolve_client,
    retriever_query,
    run_prompt,
    truncate,
)
from medeval_kit.results import Result, result_frame, result_row
from medeval_kit.stats import item_draws, percentile_interval

__all__ = [
    "load_topic_checklist", "load_content_outline", "build_outline_retriever", "normalize_text",
    "match_topic", "topics_schema", "select_topics", "write_test_points", "machine_triplets",
    "StageZeroResult", "topic_overlap", "human_topics", "bundled_machine_topics",
]

STAGE0_PROMPTS = {"topics": "generate/mcq_topics", "test_point": "generate/mcq_test_point"}
_TOPIC_MATCH_RATIO = 0.9  # difflib ratio above which a topic is the same checklist entry (typos, spacing)


def _stage0_path(name: str, path=None):
    from medeval_kit.paths import data_dir

    return data_dir() / "medqg" / "stage0" / name if path is None else path


def _read_yaml(path) -> dict:
    import yaml

    try:
        return yaml.safe_load(open(path, encoding="utf-8"))
    except FileNotFoundError:
        raise
    except yaml.YAMLError as exc:
        raise GenerationError(f"{path}: not valid YAML ({exc})") from exc


def load_topic_checklist(path=None) -> pd.DataFrame:
    """Return the NBME topic checklist (``data/medqg/stage0/nbme_topics.yaml``).

    Parameters
    ----------
    path : str or Path, optional
        A checklist YAML of your own; default the bundled one.

    Returns
    -------
    DataFrame
        ``topic_id`` (1..41), ``group``, ``section``, ``topic`` (the paper's wording).

    Raises
    ------
    GenerationError
        Invalid YAML, or no sections with topics.
    """
    p = _stage0_path("nbme_topics.yaml", path)
    rows = []
    for sec in _read_yaml(p).get("sections") or []:
        for t in sec.get("topics") or []:
            rows.append({"topic_id": len(rows) + 1, "group": sec.get("group", ""), "section": sec["section"],
                         "topic": str(t)})
    if not rows:
        raise GenerationError(f"{p}: no sections with topics")
    return pd.DataFrame(rows)


def load_content_outline(path=None) -> pd.DataFrame:
    """Return the USMLE Content Outline concepts (``data/medqg/stage0/usmle_outline.yaml``).

    Parameters
    ----------
    path : str or Path, optional
        An outline YAML of your own; default the bundled one.

    Returns
    -------
    DataFrame
        ``section_id`` (1..18), ``section``, ``concept``.

    Raises
    ------
    GenerationError
        Invalid YAML, or no sections with concepts.
    """
    p = _stage0_path("usmle_outline.yaml", path)
    rows = [{"section_id": s + 1, "section": sec["section"], "concept": str(c)}
            for s, sec in enumerate(_read_yaml(p).get("sections") or []) for c in sec.get("concepts") or []]
    if not rows:
        raise GenerationError(f"{p}: no sections with concepts")
    return pd.DataFrame(rows)


def build_outline_retriever(*, method: str = "bm25", path=None):
    """Return a fitted :class:`~medeval_kit.retrieve.Retriever` over the outline's concepts (ColBERT stand-in).

    Parameters
    ----------
    method : {"bm25", "tfidf"}, default "bm25"
        The retriever (:class:`~medeval_kit.retrieve.Retriever`).
    path : str or Path, optional
        An outline YAML of your own (:func:`load_content_outline`).

    Returns
    -------
    Retriever
        Fitted on ``concept`` and ``section``; ``query`` returns rows with ``concept`` and ``section``.
        The bundled outline is fitted once per process and method (each call returns a copy of that fit).
    """
    if path is None:
        from medeval_kit.paths import data_dir

        return cached_retriever(("outline", method, str(data_dir())), lambda: _fit_outline(method, None))
    return _fit_outline(method, path)


def _fit_outline(method: str, path):
    """Fit the retriever of :func:`build_outline_retriever`."""
    from medeval_kit.retrieve import Retriever

    bank = load_content_outline(path)
    bank["id"] = [f"outline-{i}" for i in range(len(bank))]
    return Retriever(method=method).fit(bank, text=["concept", "section"], id="id")


_PUNCT = re.compile(f"[{re.escape(string.punctuation)}’‘“”]")


def normalize_text(text) -> str:
    """Lower case, punctuation to spaces, whitespace collapsed: the key topics are matched on.

    Unlike :func:`~medeval_kit.generate.normalize_answer` (which deletes punctuation, for scoring
    answers), punctuation becomes a space, so ``"Cardio-vascular"`` matches ``"cardio vascular"``.

    Parameters
    ----------
    text : object
        The text (converted with ``str``).

    Returns
    -------
    str
        The normalized text.

    Examples
    --------
    >>> normalize_text("SAPHO  Syndrome.")
    'sapho syndrome'
    """
    return " ".join(_PUNCT.sub(" ", str(text).lower()).split())


def match_topic(text, checklist: pd.DataFrame) -> int | None:
    """The checklist ``topic_id`` of ``text`` (normalized equality, else a close spelling), or None.

    Parameters
    ----------
    text : object
        A topic as the model wrote it.
    checklist : DataFrame
        ``topic_id`` and ``topic`` (:func:`load_topic_checklist`).

    Returns
    -------
    int or None
        The matching ``topic_id``; ``None`` when no entry is equal after :func:`normalize_text` or
        close in spelling (difflib ratio >= 0.9).

    Examples
    --------
    >>> match_topic("Underlying  processes/pathways.", load_topic_checklist())
    2
    """
    return _matcher(checklist)(text)


_MATCHERS: dict[tuple, _TopicMatcher] = {}


def _matcher(checklist: pd.DataFrame) -> _TopicMatcher:
    """The :class:`_TopicMatcher` of a checklist, one per distinct (topic_id, topic) content."""
    key = (tuple(checklist["topic_id"].tolist()), tuple(checklist["topic"].tolist()))
    if key not in _MATCHERS:
        if len(_MATCHERS) >= 16:
            _MATCHERS.clear()
        _MATCHERS[key] = _TopicMatcher(checklist)
    return _MATCHERS[key]


class _TopicMatcher:
    """:func:`match_topic` against one checklist, its keys normalized once and every answer remembered.

    Parameters
    ----------
    checklist : DataFrame
        ``topic_id`` and ``topic`` (:func:`load_topic_checklist`).
    """

    def __init__(self, checklist: pd.DataFrame) -> None:
        self.keys = [normalize_text(t) for t in checklist["topic"]]
        self.squashed = [k.replace(" ", "") for k in self.keys]
        self.ids = checklist["topic_id"].tolist()
        self.first = {}
        for pos, k in enumerate(self.keys):
            self.first.setdefault(k, pos)
        self.memo: dict[str, int | None] = {}

    def __call__(self, text) -> int | None:
        """The checklist ``topic_id`` of ``text``, or None (as :func:`match_topic`)."""
        key = str(text)
        if key not in self.memo:
            self.memo[key] = self._match(text)
        return self.memo[key]

    def _match(self, text) -> int | None:
        norm = normalize_text(text)
        if not norm:
            return None
        if norm in self.first:
            return int(self.ids[self.first[norm]])
        squash = norm.replace(" ", "")
        ratios = [difflib.SequenceMatcher(None, squash, k).ratio() for k in self.squashed]
        best = int(np.argmax(ratios))
        return int(self.ids[best]) if ratios[best] >= _TOPIC_MATCH_RATIO else None


def topics_schema(checklist: pd.DataFrame, max_topics: int = 5) -> dict:
    """JSON schema of the topic reply: 1..``max_topics`` checklist topics (an enum of their wording).

    Parameters
    ----------
    checklist : DataFrame
        ``topic`` (:func:`load_topic_checklist`).
    max_topics : int, default 5
        The most topics a reply may list.

    Returns
    -------
    dict
        The JSON schema (an object with a ``topics`` array).
    """
    return {"type": "object",
            "properties": {"topics": {"type": "array", "items": {"type": "string", "enum": list(checklist["topic"])},
                                      "minItems": 1, "maxItems": int(max_topics)}},
            "required": ["topics"]}


# free text is parsed against any list of strings, so that off-list topics are seen and counted
_LOOSE_TOPICS = {"type": "object", "properties": {"topics": {"type": "array", "items": {"type": "string"}}},
                 "required": ["topics"]}


def _checklist_text(checklist: pd.DataFrame) -> str:
    return "\n".join(f"{sec}: " + "; ".join(d["topic"]) for sec, d in checklist.groupby("section", sort=False))


def _notes(notes: pd.DataFrame, case: str, note: str) -> pd.DataFrame:
    for col in (case, note):
        if col not in notes.columns:
            raise GenerationError(f"notes have no column {col!r}; present: {list(notes.columns)}")
    return notes[[case, note]].drop_duplicates(case).reset_index(drop=True)


_NOTES_DOC = """notes : DataFrame
        One row per clinical note: ``case`` (the note's id) and ``clinical_note`` (its text) (e.g.
        :func:`~medeval_kit.datasets.load_srefine_inputs`; duplicates of a case are dropped)."""
_LLM_DOC = """cache_mode : {"use", "record", "replay"}, default "use"
        The LLM cache mode (:mod:`medeval_kit.llm`).
    constrained : bool, default True
        Constrain replies to the JSON schema (grammar with the local model, structured output with APIs);
        ``False`` parses free text against the same schema, so failures are counted.
    seed : int, default 0
        Random seed of the calls.
    temperature : float, default 0.0
        Sampling temperature.
    max_note_chars : int or None, default 800
        Notes are cut to this many characters in the prompt; ``None`` keeps them whole.
    progress : bool, default False
        Show a progress bar.
    columns : mapping of str to str, optional
        Your column names as ``{canonical name: your column}``, e.g. ``{"clinical_note": "text"}``
        (:mod:`medeval_kit.columns`). The old keywords ``case=`` and ``note=`` still work for one release."""


def _llm_docs(fn):
    fn.__doc__ = fn.__doc__.replace("    {notes}", "    " + _NOTES_DOC).replace("    {llm}", "    " + _LLM_DOC)
    return fn


@shared_docs
@_llm_docs
@legacy_keywords(note="columns:clinical_note")
@takes_columns("case", "clinical_note")
def select_topics(notes: pd.DataFrame, *, model: str | None = None, client=None, cache_mode: str = "use",
                  checklist: pd.DataFrame | None = None, max_topics: int = 5, constrained: bool = True,
                  seed: int = 0, temperature: float = 0.0, max_note_chars: int | None = 800,
                  progress: bool = False, columns: Columns = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ask the LLM for at most ``max_topics`` checklist topics per note.

    Parameters
    ----------
    {notes}
    {model}
        Default ``"local/smollm2-135m"``.
    {client}
    checklist : DataFrame, optional
        The topic checklist; default :func:`load_topic_checklist`.
    max_topics : int, default 5
        The most topics per note.
    {llm}

    Returns
    -------
    tuple of (DataFrame, DataFrame)
        ``(topics, calls)``. ``topics``: one row per returned topic (case, rank, raw, topic, topic_id,
        status): ``ok``, ``off_list`` (not on the checklist: kept, counted, not used), ``duplicate``,
        ``over_limit`` (beyond ``max_topics``), or one ``failed`` row (topic NaN) for a note whose
        reply did not parse. ``calls``: one row per LLM call with its provenance.
    """
    from medeval_kit.prompts import load_prompt

    model = model or DEFAULT_MODEL
    case, note = "case", "clinical_note"

    cl = load_topic_checklist() if checklist is None else checklist
    nts = _notes(notes, case, note)
    prompt = load_prompt(STAGE0_PROMPTS["topics"])
    variables = [{"clinical_note": truncate(n, max_note_chars), "checklist": _checklist_text(cl),
                  "max_topics": int(max_topics)} for n in nts[note]]
    recs = run_prompt(resolve_client(model, client, cache_mode), prompt, variables, model=model,
                      temperature=temperature, max_tokens=400, seed=seed, constrained=constrained,
                      schema=topics_schema(cl, max_topics) if constrained else _LOOSE_TOPICS,
                      progress=progress, desc="stage 0 topics",
                      metadata=[{"item": c, "stage": "stage0_topics"} for c in nts[case]])
    by_id = cl.set_index("topic_id")["topic"]
    match = _matcher(cl)
    rows, calls = [], []
    for c, rec in zip(nts[case], recs):
        calls.append({"case": c, "stage": "stage0_topics", **{k: v for k, v in rec.items() if k != "parsed"}})
        got = rec["parsed"].get("topics") if isinstance(rec["parsed"], dict) else None
        if rec["parse_status"] != "ok" or not isinstance(got, list):
            rows.append({"case": c, "rank": 0, "raw": rec.get("text"), "topic": np.nan, "topic_id": np.nan,
                         "status": "failed"})
            continue
        seen: set[int] = set()
        for r, raw in enumerate(got, start=1):
            tid = match(raw)
            status = ("off_list" if tid is None else "duplicate" if tid in seen
                      else "over_limit" if len(seen) >= max_topics else "ok")
            if status == "ok":
                seen.add(tid)
            rows.append({"case": c, "rank": r, "raw": str(raw), "topic": by_id.get(tid, np.nan) if tid else np.nan,
                         "topic_id": tid if tid is not None else np.nan, "status": status})
    out = pd.DataFrame(rows, columns=["case", "rank", "raw", "topic", "topic_id", "status"])
    out["topic_id"] = out["topic_id"].astype("Int64")
    return out, pd.DataFrame(calls)


@shared_docs
@_llm_docs
@legacy_keywords(note="columns:clinical_note")
@takes_columns("case", "clinical_note")
def write_test_points(topics: pd.DataFrame, notes: pd.DataFrame, *, model: str | None = None, client=None,
                      cache_mode: str = "use", retriever=None, k_concepts: int = 8, constrained: bool = True,
                      seed: int = 0, temperature: float = 0.0, max_note_chars: int | None = 800,
                      progress: bool = False, columns: Columns = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Retrieve outline concepts for each (note, usable topic) and let the LLM write the test point.

    Parameters
    ----------
    topics : DataFrame
        The topics of :func:`select_topics` (rows with ``status == "ok"`` are used).
    {notes}
    {model}
        Default ``"local/smollm2-135m"``.
    {client}
    retriever : Retriever, optional
        Retrieves outline concepts; default :func:`build_outline_retriever`.
    k_concepts : int, default 8
        Concepts retrieved per (note, topic); 0 retrieves none.
    {llm}

    Returns
    -------
    tuple of (DataFrame, DataFrame)
        ``(test_points, calls)``: one row per usable topic (case, rank, topic, topic_id, concepts,
        keypoint, parse_status; a reply that does not parse keeps its row with keypoint NaN), and one
        row per LLM call.
    """
    from medeval_kit.prompts import load_prompt

    model = model or DEFAULT_MODEL
    case, note = "case", "clinical_note"

    text = _notes(notes, case, note).set_index(case)[note]
    ok = topics[topics["status"] == "ok"].reset_index(drop=True)
    retriever = build_outline_retriever() if retriever is None else retriever
    concept_lists = []
    for c, t in zip(ok["case"], ok["topic"]):
        hits = retriever_query(retriever, f"{t} {truncate(text[c], 1500)}", int(k_concepts)) if k_concepts > 0 else None
        concept_lists.append([] if hits is None else [f"{h['concept']} ({h['section']})" for _, h in hits.iterrows()])
    variables = [{"clinical_note": truncate(text[c], max_note_chars), "topic": t,
                  "concepts": "\n".join(f"- {x}" for x in cs) or "(none)"}
                 for c, t, cs in zip(ok["case"], ok["topic"], concept_lists)]
    recs = run_prompt(resolve_client(model, client, cache_mode), load_prompt(STAGE0_PROMPTS["test_point"]),
                      variables, model=model, temperature=temperature, max_tokens=120, seed=seed,
                      constrained=constrained, progress=progress, desc="stage 0 test points",
                      metadata=[{"item": c, "stage": "stage0_test_point"} for c in ok["case"]])
    rows, calls = [], []
    for (_, r), cs, rec in zip(ok.iterrows(), concept_lists, recs):
        calls.append({"case": r["case"], "stage": "stage0_test_point",
                      **{k: v for k, v in rec.items() if k != "parsed"}})
        kp = rec["parsed"].get("test_point") if isinstance(rec["parsed"], dict) else None
        good = rec["parse_status"] == "ok" and isinstance(kp, str) and kp.strip() != ""
        rows.append({"case": r["case"], "rank": r["rank"], "topic": r["topic"], "topic_id": r["topic_id"],
                     "concepts": "; ".join(cs), "keypoint": kp.strip() if good else np.nan,
                     "parse_status": rec["parse_status"] if rec["parse_status"] != "ok" or good else "failed"})
    cols = ["case", "rank", "topic", "topic_id", "concepts", "keypoint", "parse_status"]
    return pd.DataFrame(rows, columns=cols), pd.DataFrame(calls)


@dataclass(frozen=True)
class StageZeroResult(Result):
    """Output of :func:`machine_triplets`: the topic rows, the test points, the triplets and the calls.

    Not a statistic: :meth:`to_frame` is one row of counts.

    Attributes
    ----------
    topics : DataFrame
        The topic rows of :func:`select_topics`.
    test_points : DataFrame
        The test points of :func:`write_test_points`.
    triplets : DataFrame
        The (note, topic, test point) triplets for :func:`~medeval_kit.generate.run_srefine`.
    calls : DataFrame
        One row per LLM call with its provenance.
    params : dict
        The settings of the run (model, max_topics, per_note, k_concepts, seed, retriever, constrained).
    """

    topics: pd.DataFrame
    test_points: pd.DataFrame
    triplets: pd.DataFrame
    calls: pd.DataFrame
    params: dict = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """One row of counts: notes, topics by status, test points written and failed, triplets.

        Returns
        -------
        DataFrame
            One row of counts and the run's model, retriever and ``k_concepts``.
        """
        t, k = self.topics, self.test_points
        st = t["status"].value_counts()
        return pd.DataFrame([{
            "n_notes": int(t["case"].nunique()), "n_topics_returned": int((t["status"] != "failed").sum()),
            **{f"n_topics_{s}": int(st.get(s, 0)) for s in ("ok", "off_list", "duplicate", "over_limit", "failed")},
            "n_test_points": int(k["keypoint"].notna().sum()), "n_test_points_failed": int(k["keypoint"].isna().sum()),
            "n_triplets": len(self.triplets), "model": self.params.get("model"),
            "retriever": self.params.get("retriever"), "k_concepts": self.params.get("k_concepts"),
        }])

    def for_overlap(self) -> pd.DataFrame:
        """case, topic, keypoint for :func:`topic_overlap`: every usable topic with its test point (NaN
        if writing failed), plus off-list and unparsed replies as rows with topic NaN (counted as failures)."""
        t = self.topics
        ok = t[t["status"] == "ok"].merge(self.test_points[["case", "rank", "keypoint"]], on=["case", "rank"],
                                           how="left")
        bad = t[t["status"].isin(["off_list", "failed"])].assign(topic=np.nan, keypoint=np.nan)
        return pd.concat([ok, bad], ignore_index=True)[["case", "topic", "keypoint"]]

    def summary(self) -> str:
        """One line: notes, usable topics, off-list/failed counts and test points."""
        r = self.to_frame().iloc[0]
        return (f"Stage 0: {r.n_notes} notes -> {r.n_topics_ok} checklist topics "
                f"({r.n_topics_off_list} off the list, {r.n_topics_duplicate} duplicates, "
                f"{r.n_topics_over_limit} over the limit, {r.n_topics_failed} unparsed replies) -> "
                f"{r.n_test_points} test points ({r.n_test_points_failed} failed) -> {r.n_triplets} triplets; "
                f"retriever {r.retriever} over the USMLE outline (ColBERT stand-in)")


@shared_docs
@_llm_docs
@legacy_keywords(note="columns:clinical_note")
@takes_columns("case", "clinical_note")
def machine_triplets(notes: pd.DataFrame, *, model: str | None = None, client=None, cache_mode: str = "use",
                     max_topics: int = 5, per_note: int | None = None, k_concepts: int = 8, retriever=None,
                     constrained: bool = True, seed: int = 0, temperature: float = 0.0,
                     max_note_chars: int | None = 800, progress: bool = False,
                     columns: Columns = None) -> StageZeroResult:
    """Stage 0 end to end: topics, then test points; return the machine (note, topic, test point) triplets.

    Parameters
    ----------
    {notes}
    {model}
        Default ``"local/smollm2-135m"``.
    {client}
    max_topics : int, default 5
        The most topics per note (:func:`select_topics`).
    per_note : int, optional
        Keep the first ``per_note`` usable topics of each note (in the model's order) for the
        triplets; every topic still gets a test point (for :func:`topic_overlap`).
    k_concepts : int, default 8
        Outline concepts retrieved per (note, topic).
    retriever : Retriever, optional
        Default :func:`build_outline_retriever`.
    {llm}

    Returns
    -------
    StageZeroResult
        The topics, test points, triplets (ids ``<case>-m<rank>``, ``source="machine"``) and calls.
    """
    model = model or DEFAULT_MODEL
    case, note = "case", "clinical_note"
    client = resolve_client(model, client, cache_mode)
    kw = dict(model=model, client=client, constrained=constrained, seed=seed, temperature=temperature,
              max_note_chars=max_note_chars, progress=progress)
    topics, c1 = select_topics(notes, max_topics=max_topics, **kw)
    retriever = build_outline_retriever() if retriever is None else retriever
    tps, c2 = write_test_points(topics, notes, retriever=retriever, k_concepts=k_concepts, **kw)
    text = _notes(notes, case, note).set_index(case)[note]
    good = tps[tps["keypoint"].notna()]
    if per_note is not None:
        good = good.groupby("case", sort=False).head(int(per_note))
    trip = pd.DataFrame({"item": [f"{c}-m{r}" for c, r in zip(good["case"], good["rank"])], "case": good["case"].values,
                         "clinical_note": [text[c] for c in good["case"]], "topic": good["topic"].values,
                         "keypoint": good["keypoint"].values, "source": "machine"})
    params = dict(model=model, max_topics=max_topics, per_note=per_note, k_concepts=k_concepts, seed=seed,
                  retriever=getattr(retriever, "method", None), constrained=constrained)
    return StageZeroResult(topics=topics, test_points=tps, triplets=trip.reset_index(drop=True),
                           calls=pd.concat([c1, c2], ignore_index=True), params=params)


# =========================================================================== human vs machine
def human_topics(root=None) -> pd.DataFrame:
    """The bundled expert triplets of all 46 notes (both files).

    Parameters
    ----------
    root : str or Path, optional
        The folder of the files (:func:`~medeval_kit.datasets.load_srefine_inputs`).

    Returns
    -------
    DataFrame
        ``case, clinical_note, topic, keypoint``.
    """
    from medeval_kit.datasets.medqg import load_srefine_inputs

    return load_srefine_inputs("both", root=root)[["case", "clinical_note", "topic", "keypoint"]]


def bundled_machine_topics(human: pd.DataFrame | None = None) -> pd.DataFrame:
    """The paper's own machine topics and test points (GPT-4, ``gpt4_usmle_q_mach_kp.csv``).

    Parameters
    ----------
    human : DataFrame, optional
        The expert triplets (``case``, ``clinical_note``); default :func:`human_topics`.

    Returns
    -------
    DataFrame
        ``case, topic, keypoint`` for the notes that also have expert triplets, keyed by the expert
        table's ``case``.
    """
    from medeval_kit.paths import data_dir

    human = human_topics() if human is None else human
    p = data_dir() / "medqg" / "inputs" / "gpt4_usmle_q_mach_kp.csv"
    m = pd.read_csv(p)
    key = (lambda s: " ".join(str(s).split())[:150])
    case_of = dict(zip(human["clinical_note"].map(key), human["case"]))
    m["case"] = m["clinical_note"].map(key).map(case_of)
    return m.loc[m["case"].notna(), ["case", "topic", "keypoint"]].reset_index(drop=True)


def _by_case(df: pd.DataFrame, col: str) -> dict:
    """``{case: list of df[col] in row order}``: what ``df.loc[df["case"] == c, col]`` gives, for every case."""
    out: dict = {}
    for c, v in zip(df["case"], df[col]):
        out.setdefault(c, []).append(v)
    return out


def _kp_match(m: str, hs: Sequence[str], how: str) -> bool:
    if how == "exact":
        return m in hs
    nm = normalize_text(m)
    hn = [normalize_text(h) for h in hs]
    if how == "normalized":
        return nm in hn
    return any(nm and h and (nm in h or h in nm) for h in hn)  # "contains": one phrase inside the other


def _ratio_ci(num: np.ndarray, den: np.ndarray, n_boot: int, seed: int) -> tuple[float, tuple[float, float]]:
    """Pooled share sum(num)/sum(den) with a percentile bootstrap CI that resamples notes (clusters)."""
    est = num.sum() / den.sum() if den.sum() else np.nan
    if len(num) < 2 or not den.sum():
        return est, (np.nan, np.nan)
    idx = item_draws(len(num), n_boot, np.random.default_rng(seed))
    d = den[idx].sum(1)
    reps = np.where(d > 0, num[idx].sum(1) / np.where(d > 0, d, 1), np.nan)
    return est, percentile_interval(reps[np.isfinite(reps)])


@shared_docs
@legacy_keywords(label="source")
def topic_overlap(machine: pd.DataFrame, human: pd.DataFrame, *, source: str = "machine",
                  checklist: pd.DataFrame | None = None, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """How machine topics and test points overlap with the human ones of the same notes (result rows).

    ``machine``/``human``: long tables with case, topic, keypoint (one row per topic or triplet;
    machine rows with a missing topic or keypoint count as failures, ``n_failed``). Per note, topics
    are compared as sets: ``precision`` = share of machine topics that the experts also chose,
    ``recall`` = share of expert topics that the machine also chose; ``exact`` compares the raw
    strings, ``normalized`` the checklist entry after :func:`match_topic`. Test points: share of
    machine test points equal to an expert test point of the same note (``exact``, ``normalized``),
    or one phrase containing the other (``contains``, lenient). Only notes present in both count;
    CIs resample notes (pairs within a note are not independent).

    Parameters
    ----------
    machine : DataFrame
        ``case, topic, keypoint`` of the machine (e.g. :meth:`StageZeroResult.for_overlap`).
    human : DataFrame
        ``case, topic, keypoint`` of the experts (:func:`human_topics`).
    source : str, default "machine"
        The value of the ``source`` column, naming the machine (``label=`` before; deprecated).
    checklist : DataFrame, optional
        The topic checklist; default :func:`load_topic_checklist`.
    n_boot : int, default 2000
        Cluster-bootstrap resamples (notes) for the CIs.
    {seed}

    Returns
    -------
    DataFrame
        One row per (``source``, ``measure``, ``match``, ``n_notes``): measures ``topic_precision``,
        ``topic_recall`` (match ``exact``/``normalized``) and ``test_point_match``
        (``exact``/``normalized``/``contains``), with the contract columns.

    Raises
    ------
    GenerationError
        The two tables share no case.
    """
    cl = load_topic_checklist() if checklist is None else checklist
    cases = sorted(set(machine["case"].dropna()) & set(human["case"].dropna()))
    if not cases:
        raise GenerationError("machine and human topic tables share no case (note) id")
    m_all = machine[machine["case"].isin(cases)]
    m = m_all.dropna(subset=["topic"])
    n_failed_topics = len(m_all) - len(m)
    h = human[human["case"].isin(cases)]
    canon = _matcher(cl)
    m_topics, h_topics = _by_case(m, "topic"), _by_case(h, "topic")
    rows = []
    for how in ("exact", "normalized"):
        key = (lambda s: " ".join(str(s).split())) if how == "exact" else canon
        num_p, den_p, num_r, den_r = [], [], [], []
        for c in cases:
            ms = {key(t) for t in m_topics.get(c, [])} - {None}
            hs = {key(t) for t in h_topics.get(c, [])} - {None}
            num_p.append(len(ms & hs))
            den_p.append(len(ms))
            num_r.append(len(ms & hs))
            den_r.append(len(hs))
        for measure, num, den in (("topic_precision", num_p, den_p), ("topic_recall", num_r, den_r)):
            est, ci = _ratio_ci(np.array(num, float), np.array(den, float), n_boot, seed)
            rows.append(result_row(est, ci, "cluster percentile bootstrap (notes)", n_items=int(sum(den)),
                                   n_failed=n_failed_topics, source=source, measure=measure, match=how,
                                   n_notes=len(cases)))
    mk_all = m_all
    mk = mk_all.dropna(subset=["keypoint"])
    h_points, m_points = _by_case(h.dropna(subset=["keypoint"]), "keypoint"), _by_case(mk, "keypoint")
    for how in ("exact", "normalized", "contains"):
        num, den = [], []
        for c in cases:
            hs = [str(x) for x in h_points.get(c, [])]
            ks = [str(x) for x in m_points.get(c, [])]
            num.append(sum(_kp_match(k, hs, how) for k in ks))
            den.append(len(ks))
        est, ci = _ratio_ci(np.array(num, float), np.array(den, float), n_boot, seed)
        rows.append(result_row(est, ci, "cluster percentile bootstrap (notes)", n_items=int(sum(den)),
                               n_failed=len(mk_all) - len(mk), source=source, measure="test_point_match",
                               match=how, n_notes=len(cases)))
    return result_frame(rows, keys=["source", "measure", "match", "n_notes"])
