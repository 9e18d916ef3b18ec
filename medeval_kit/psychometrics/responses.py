"""Examinee responses: the tidy ``responses`` table of item analysis, from your file or from LLM examinees.

One row per item and examinee: ``item``, ``examinee``, ``choice`` (the option letter chosen; NA when
the answer is missing), ``key`` (the keyed letter), ``correct`` (1/0; NA when the answer is missing)
and ``parse_status`` (``ok``, ``failed``: a reply that did not give one of the offered letters,
``missing``: no reply). Missing answers are never scored wrong and never dropped: every statistic
uses the answers present and reports how many were missing (``n_failed``). ``offered`` (optional)
holds the letters the item offered, so options nobody chose still count in the distractor analysis.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from medeval_kit.columns import Columns, apply_columns, takes_columns
from medeval_kit.datasets._io import read_table
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import ParameterError, SchemaError
from medeval_kit.results import result_frame, result_row
from medeval_kit.stats import wilson_interval

__all__ = ["RESPONSE_COLUMNS", "PARSE_STATUSES", "score_responses", "read_responses", "responses_from_matrix",
           "score_matrix", "missing_summary", "examinee_panel", "answer_items", "answer_schema"]

RESPONSE_COLUMNS = ("item", "examinee", "choice", "key", "correct", "parse_status")
PARSE_STATUSES = ("ok", "failed", "missing")
DEFAULT_EXAMINEE_MODEL = "local/smollm2-135m"


def _letter(value) -> str | None:
    """An option letter, upper case and stripped; None for a missing or empty value."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return None
    s = str(value).strip().upper()
    return s or None


_ROLES = ("item", "examinee", "choice", "key", "correct", "parse_status", "offered")


@shared_docs
@takes_columns(*_ROLES)
def score_responses(df: pd.DataFrame, *, columns: Columns = None, source: str | None = None) -> pd.DataFrame:
    """Return ``df`` as a scored ``responses`` table (``correct`` filled from the chosen and keyed letters).

    Needs ``item`` and ``examinee`` and either ``choice`` + ``key`` (``correct`` = choice == key) or
    ``correct`` (0/1) alone. An empty choice is a missing answer (``parse_status`` ``missing`` unless the
    table says ``failed``); its ``correct`` is NA. Duplicate (item, examinee) rows are an error.

    Parameters
    ----------
    df : DataFrame
        One row per item and examinee: ``item``, ``examinee`` and ``choice`` + ``key`` or ``correct``;
        optional ``parse_status`` and ``offered`` (the letters the item offered). Other columns are kept.
    {columns}
    {source}

    Returns
    -------
    DataFrame
        The ``responses`` table: ``item, examinee, correct, choice, key, parse_status`` (``offered`` when
        given), then the other columns of ``df``.

    Raises
    ------
    SchemaError
        A needed column is missing, a pair repeats, a key is empty or ``correct`` is not 0/1.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"q": ["q1", "q1"], "student": ["a", "b"], "choice": ["A", "C"], "key": ["A", "A"]})
    >>> score_responses(df, columns={"item": "q", "examinee": "student"})["correct"].tolist()
    [1, 0]
    """
    has_choice = "choice" in df.columns and "key" in df.columns
    need = ["item", "examinee"] + (["choice", "key"] if has_choice else ["correct"])
    absent = [c for c in need if c not in df.columns]
    if absent:
        raise SchemaError("responses", absent[0], [], f"column(s) {absent} not found; present: {list(df.columns)}. "
                          "Give item and examinee columns and either choice + key letters or a 0/1 correct column "
                          "(map yours with columns={...})", source)
    out = pd.DataFrame({"item": df["item"].astype(str).to_numpy(), "examinee": df["examinee"].astype(str).to_numpy()})
    dup = out.duplicated(["item", "examinee"], keep=False)
    if dup.any():
        raise SchemaError("responses", "item", [int(i) for i in np.flatnonzero(dup)],
                          "an examinee answers each item once; these (item, examinee) pairs repeat", source)
    if has_choice:
        choices, keys = [_letter(v) for v in df["choice"]], [_letter(v) for v in df["key"]]
        nokey = [i for i, k in enumerate(keys) if k is None]
        if nokey:
            raise SchemaError("responses", "key", nokey, "the key letter is empty", source)
        # scored from the Python lists: a missing choice must stay NA, never compare unequal and count wrong
        out["correct"] = [pd.NA if c is None else int(c == k) for c, k in zip(choices, keys)]
        out["choice"], out["key"] = choices, keys
    else:
        vals = pd.to_numeric(df["correct"], errors="coerce")
        bad = vals.notna() & ~vals.isin([0, 1])
        if bad.any():
            raise SchemaError("responses", "correct", [int(i) for i in np.flatnonzero(bad)], "correct must be 0 or 1",
                              source)
        out["choice"], out["key"] = None, None
        out["correct"] = [pd.NA if pd.isna(v) else int(v) for v in vals]
    answered = pd.Series([v is not pd.NA for v in out["correct"]])
    if "parse_status" in df.columns:
        st = df["parse_status"].astype(str).str.strip().to_numpy()
        st = np.where(answered, "ok", np.where(np.isin(st, ["failed", "missing"]), st, "missing"))
    else:
        st = np.where(answered, "ok", "missing")
    out["parse_status"] = st
    out["correct"] = out["correct"].astype("Int64")
    if "offered" in df.columns:
        out["offered"] = df["offered"].astype(str).str.replace(r"[^A-Za-z]", "", regex=True).str.upper().to_numpy()
    extras = [c for c in df.columns if c not in set(_ROLES) and c not in out.columns]
    for c in extras:
        out[c] = df[c].to_numpy()
    return out


@shared_docs
def read_responses(path: str | Path, *, columns: Columns = None, sep: str | None = None,
                   encoding: str | None = None, **old_columns: str) -> pd.DataFrame:
    """Return your responses file (CSV, TSV, JSONL, JSON or Parquet) as a scored ``responses`` table.

    Parameters
    ----------
    path : str or Path
        The file: one row per item and examinee (see :func:`score_responses` for the columns).
    {columns}
    sep : str, optional
        The CSV/TSV separator, as in :func:`medeval_kit.datasets.read_table` (a file that looks
        semicolon-separated is an error naming this option).
    encoding : str, optional
        The text encoding when the file is not UTF-8.
    **old_columns : str
        Deprecated per-column keywords (``item="q"``, ``examinee=``, ``choice=``, ``key=``, ``correct=``,
        ``parse_status=``, ``offered=``): they still work for one release, with a ``DeprecationWarning``;
        pass ``columns={"item": "q"}`` instead.

    Returns
    -------
    DataFrame
        The scored ``responses`` table (:func:`score_responses`).

    Raises
    ------
    SchemaError
        A needed column is missing (the error names the file), or a value is invalid.
    """
    unknown = sorted(set(old_columns) - set(_ROLES))
    if unknown:
        raise TypeError(f"read_responses() got unexpected keyword argument(s) {unknown}")
    renamed = {k: v for k, v in old_columns.items() if v != k}
    if renamed:
        warnings.warn(f"read_responses({', '.join(f'{k}={v!r}' for k, v in renamed.items())}) is deprecated; "
                      f"pass columns={renamed!r}", DeprecationWarning, stacklevel=2)
    df = read_table(path, text=True, sep=sep, encoding=encoding)
    df = apply_columns(df, {**renamed, **dict(columns or {})}, _ROLES, where=str(path))
    return score_responses(df, source=str(path))


def responses_from_matrix(matrix: pd.DataFrame | np.ndarray, *, items: Sequence[str] | None = None,
                          examinees: Sequence[str] | None = None) -> pd.DataFrame:
    """Return a 0/1 score matrix (rows examinees, columns items; NaN missing) as a ``responses`` table.

    Parameters
    ----------
    matrix : DataFrame or ndarray
        Examinees x items, 1 right, 0 wrong, NaN missing.
    items : sequence of str, optional
        Item names; default the matrix's column labels.
    examinees : sequence of str, optional
        Examinee names; default the matrix's row labels.

    Returns
    -------
    DataFrame
        The scored ``responses`` table (no ``choice``/``key``: letters are unknown).

    Examples
    --------
    >>> responses_from_matrix([[1, 0], [1, 1]], items=["q1", "q2"])["correct"].tolist()
    [1, 0, 1, 1]
    """
    m = pd.DataFrame(matrix)
    if items is not None:
        m.columns = list(items)
    if examinees is not None:
        m.index = list(examinees)
    long = m.rename_axis(index="examinee", columns="item").stack(future_stack=True).rename("correct").reset_index()
    return score_responses(long.astype({"item": str, "examinee": str}))


@shared_docs
@takes_columns("item", "examinee", "correct")
def score_matrix(responses: pd.DataFrame, *, columns: Columns = None) -> pd.DataFrame:
    """Return the examinee x item matrix of ``correct`` (float; NaN where the answer is missing).

    Parameters
    ----------
    responses : DataFrame
        A scored ``responses`` table.
    {columns}

    Returns
    -------
    DataFrame
        Rows examinees, columns items.
    """
    m = responses.pivot(index="examinee", columns="item", values="correct")
    return m.astype("Float64").astype(float)


@shared_docs
@takes_columns("parse_status")
def missing_summary(responses: pd.DataFrame, *, by: str | None = None, confidence: float = 0.95,
                    columns: Columns = None) -> pd.DataFrame:
    """Return the answers per parse status (``ok``, ``failed``, ``missing``) and the share not answered.

    Parameters
    ----------
    responses : DataFrame
        A scored ``responses`` table.
    by : str, optional
        A column to count per value of (e.g. ``"examinee"``); default one row for all answers.
    {confidence}
    {columns}

    Returns
    -------
    DataFrame
        Contract rows (``by`` first when given): ``estimate`` the share of answers failed or missing
        (Wilson CI), ``n_items`` the answers, ``n_failed`` those failed or missing; extras ``ok``,
        ``failed``, ``missing`` (counts) and ``n`` (all answers).

    Examples
    --------
    >>> from medeval_kit.psychometrics import synthetic_exam
    >>> exam = synthetic_exam(5, 40, missing_rate=0.1, seed=0)
    >>> int(missing_summary(exam.responses)["n"].iloc[0])
    200
    """
    keys = [by] if by else []
    g = responses.groupby(keys + ["parse_status"]).size().unstack("parse_status", fill_value=0) if keys else \
        responses["parse_status"].value_counts().to_frame().T
    for s in PARSE_STATUSES:
        if s not in g.columns:
            g[s] = 0
    g = g[list(PARSE_STATUSES)].astype(int)
    g["n"] = g.sum(axis=1)
    g = g.reset_index(drop=not keys)
    rows = []
    for _, r in g.iterrows():
        n, k = int(r["n"]), int(r["failed"] + r["missing"])
        rows.append(result_row(k / n if n else math.nan,
                               wilson_interval(k, n, confidence=confidence) if n else (math.nan, math.nan),
                               "Wilson" if n else "", n_items=n, n_failed=k, note="" if n else "no answers",
                               **({by: r[by]} if by else {}), ok=int(r["ok"]), failed=int(r["failed"]),
                               missing=int(r["missing"]), n=n))
    return result_frame(rows, keys=keys)


@shared_docs
def examinee_panel(personas: Sequence[str] | None = None, seeds: Sequence[int] = (0,), *,
                   template: str = "examinee/answer_mcq", temperature: float = 0.7,
                   model: str | None = None) -> pd.DataFrame:
    """Return one row per LLM examinee: each persona of ``template`` under each seed.

    Personas are named in the template's front-matter (``personas:``). With ``temperature`` 0 different
    seeds give the same answers, so the default samples.

    Parameters
    ----------
    personas : sequence of str, optional
        Persona names from the template; default all of them.
    seeds : sequence of int
        Sampling seeds; each persona under each seed is one examinee.
    template : str
        The answer prompt (``prompts/<template>.md``).
    temperature : float
        Sampling temperature of the examinees.
    {model}
        Default ``"local/smollm2-135m"``.

    Returns
    -------
    DataFrame
        ``examinee`` (``persona/s<seed>``), ``model``, ``persona``, ``persona_text``, ``seed``, ``temperature``.

    Raises
    ------
    ParameterError
        A persona is not in the template, or no persona or seed is given.

    Examples
    --------
    >>> examinee_panel(["careful_student"], seeds=[0, 1])["examinee"].tolist()
    ['careful_student/s0', 'careful_student/s1']
    """
    model = DEFAULT_EXAMINEE_MODEL if model is None else model
    from medeval_kit.prompts import load_prompt

    known = dict(load_prompt(template).meta.get("personas") or {})
    names = list(personas) if personas is not None else list(known)
    unknown = [p for p in names if p not in known]
    if unknown:
        raise ParameterError(f"persona(s) {unknown} are not in prompts/{template}.md; choose from {sorted(known)}")
    if not names or not len(seeds):
        raise ParameterError("give at least one persona and one seed")
    return pd.DataFrame([{"examinee": f"{p}/s{int(s)}", "model": model, "persona": p, "persona_text": known[p],
                          "seed": int(s), "temperature": float(temperature)} for p in names for s in seeds])


def answer_schema(letters: Sequence[str]) -> dict:
    """Return the JSON schema of an answer: ``{"answer": one of letters}``.

    Parameters
    ----------
    letters : sequence of str
        The option letters offered.

    Returns
    -------
    dict
        A JSON schema object.
    """
    return {"type": "object", "properties": {"answer": {"type": "string", "enum": list(letters)}},
            "required": ["answer"]}


def answer_items(items: pd.DataFrame, panel: pd.DataFrame, *, client=None, cache_mode: str = "use",
                 template: str = "examinee/answer_mcq", max_tokens: int = 16, constrained: bool = True,
                 progress: bool = False) -> pd.DataFrame:
    """Every examinee of ``panel`` answers every usable item (``parse_status == "ok"``); return ``responses``.

    One call per item and examinee, in one client run per model; the reply is constrained to
    ``{"answer": <one of the item's letters>}`` (``constrained=False`` asks in the prompt only and parses
    the reply). A reply that gives no offered letter is kept: ``choice`` and ``correct`` NA,
    ``parse_status`` ``failed`` (``missing`` when the call failed). Extra columns: ``persona``, ``seed``,
    ``model``, ``text`` (raw reply), ``cached``, ``offered``, ``source``, ``trace``/``round`` when the
    items have them.

    Parameters
    ----------
    items : DataFrame
        An MCQ items table (:func:`medeval_kit.psychometrics.mcq_items`).
    panel : DataFrame
        The examinees (:func:`examinee_panel`).
    client : Client, optional
        The LLM client for every model of the panel; one per model is made when omitted.
    cache_mode : str
        The LLM cache mode when clients are made here (``use``, ``replay``, ``record``).
    template : str
        The answer prompt (``prompts/<template>.md``).
    max_tokens : int
        Reply length limit.
    constrained : bool
        Constrain the reply to the answer schema (else ask in the prompt and parse).
    progress : bool
        Show a progress bar.

    Returns
    -------
    DataFrame
        The ``responses`` table with the extras above.
    """
    from medeval_kit.llm import Request, get_client
    from medeval_kit.llm.parse import parse_reply
    from medeval_kit.prompts import load_prompt
    from medeval_kit.psychometrics.items import format_options

    usable = items[items["parse_status"] == "ok"]
    prompt = load_prompt(template)
    rows = []
    usable_rows = [it for _, it in usable.iterrows()]  # once, not once per examinee
    for model, group in panel.groupby("model", sort=False):
        cl = client if client is not None else get_client(str(model), cache_mode=cache_mode)
        reqs, meta = [], []
        for _, ex in group.iterrows():
            for it in usable_rows:
                letters = list(it["options"])
                schema = answer_schema(letters)
                msgs = prompt.render(persona=ex["persona_text"], question=str(it["question"]),
                                     options=format_options(it["options"]), letters=", ".join(letters))
                reqs.append(Request(messages=msgs, model=str(model), temperature=float(ex["temperature"]),
                                    max_tokens=int(max_tokens), schema=schema if constrained else None,
                                    seed=int(ex["seed"]), metadata={"item": it["item"], "examinee": ex["examinee"]}))
                meta.append((it, ex, schema))
        if not reqs:
            continue
        import inspect

        try:
            takes = set(inspect.signature(cl.run).parameters)
        except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
            takes = set()
        kw = {k: v for k, v in (("progress", progress), ("desc", f"examinees {model}")) if k in takes}
        out = cl.run(reqs, **kw)
        if len(out) != len(reqs):
            raise ParameterError(f"the client returned {len(out)} responses for {len(reqs)} requests")
        for r, (it, ex, schema) in zip(out, meta):
            text = getattr(r, "text", None)
            if constrained:
                parsed, status = getattr(r, "parsed", None), getattr(r, "parse_status", "missing")
                if status == "ok" and parsed is None and text is not None:
                    parsed, status, _ = parse_reply(text, schema)
            else:
                parsed, status, _ = parse_reply(text, schema) if text is not None else (None, "missing", None)
            if text is None:
                status = "missing"
            choice = parsed.get("answer") if status == "ok" and isinstance(parsed, dict) else None
            if choice is not None and choice not in it["options"]:
                choice, status = None, "failed"
            rows.append({"item": it["item"], "examinee": ex["examinee"], "choice": choice, "key": it["key"],
                         "correct": pd.NA if choice is None else int(choice == it["key"]),
                         "parse_status": status, "offered": "".join(it["options"]), "persona": ex["persona"],
                         "seed": int(ex["seed"]), "model": str(model), "text": text,
                         "cached": bool(getattr(r, "cached", False)), "source": it.get("source", ""),
                         **{c: it[c] for c in ("trace", "round", "difficulty_rank") if c in it.index}})
    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=[*RESPONSE_COLUMNS, "offered"])
    df["correct"] = df["correct"].astype("Int64")
    return df
