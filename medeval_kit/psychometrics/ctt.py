"""Classical test theory: item difficulty, discrimination, distractors, reliability and item flags.

All functions take the scored ``responses`` table (:mod:`medeval_kit.psychometrics.responses`).
Missing answers are left out of each statistic and counted in ``n_failed``; an examinee's score is
the share of the items they answered that they got right (the plain number right when nothing is
missing), so a missing answer never counts as wrong.

Statistics (result contract rows, keys ``item``, ``statistic``):

``difficulty``      p, the share answering correctly (Wilson CI)
``point_biserial``  corrected item-rest correlation: the item against the score on the *other* items
                    (Fisher-z CI over the examinees answering the item)
``upper_lower``     D = p(upper group) - p(lower group), groups the top and bottom ``fraction`` of
                    examinees by total score (Kelley's 27 % by default); examinees tied at a group's
                    boundary share its remaining places equally (fractional weights), so the groups do
                    not depend on row order; CI: percentile bootstrap over examinees

Default flag thresholds (:data:`FLAG_DEFAULTS`; every one is a parameter): too easy p > 0.90, too hard
p < 0.30 (common item-review bands in medical education), negative discrimination r < 0, low
discrimination r < 0.20 (Ebel 1954: D < 0.20 is poor), a distractor is non-functional when fewer than
5 % choose it (Haladyna & Downing 1993), and the key is rejected when the upper group picks some
distractor more often than the key. Flags are read off point estimates; with few examinees most of
them are noise, which the CIs show.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import ParameterError
from medeval_kit.results import result_frame, result_row
from medeval_kit.stats import fisher_z_interval, percentile_interval, wilson_interval

__all__ = ["FLAG_DEFAULTS", "item_statistics", "item_table", "distractor_analysis", "distractor_efficiency",
           "reliability", "item_flags", "group_weights", "FLAG_COLUMNS", "flag_counts"]

FLAG_DEFAULTS = {"too_easy": 0.90, "too_hard": 0.30, "min_discrimination": 0.0, "low_discrimination": 0.20,
                 "nonfunctional": 0.05}


def _matrix(responses: pd.DataFrame) -> tuple[np.ndarray, list[str], list[str]]:
    """Return (Y, items, examinees): the examinee x item 0/1 matrix with NaN for missing answers."""
    if "correct" not in responses.columns:
        raise ParameterError("responses need a 'correct' column: score them with psychometrics.score_responses")
    m = responses.pivot(index="examinee", columns="item", values="correct").astype("Float64").astype(float)
    return m.to_numpy(), [str(c) for c in m.columns], [str(i) for i in m.index]


def _scores(Y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (total proportion score, per-examinee sum, per-examinee answered count)."""
    A = ~np.isnan(Y)
    S = np.nansum(Y, axis=1)
    C = A.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        total = np.where(C > 0, S / np.maximum(C, 1), np.nan)
    return total, S, C


def _rest(Y: np.ndarray, S: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Return the examinee x item rest score: share right on the other answered items (NaN if none)."""
    A = ~np.isnan(Y)
    y0 = np.where(A, Y, 0.0)
    num = S[:, None] - y0
    den = C[:, None] - A
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.maximum(den, 1), np.nan)


def group_weights(score: np.ndarray, fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """Return (upper, lower) weights: the top and bottom ``fraction`` of examinees by ``score``.

    The group size is ``round(fraction * n)`` (at least 1); examinees tied at the boundary share the
    remaining places equally, so each group's weights sum to its size whatever the row order.

    Parameters
    ----------
    score : ndarray
        The examinees' total scores (NaN: in neither group).
    fraction : float
        The share of examinees in each group, in (0, 0.5].

    Returns
    -------
    tuple of ndarray
        ``(upper, lower)`` weights per examinee, each in [0, 1].

    Raises
    ------
    ParameterError
        ``fraction`` is outside (0, 0.5].

    Examples
    --------
    >>> import numpy as np
    >>> up, low = group_weights(np.array([1.0, 2.0, 3.0, 4.0]), 0.25)
    >>> up.tolist(), low.tolist()
    ([0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0])
    """
    if not 0 < fraction <= 0.5:
        raise ParameterError(f"fraction must be in (0, 0.5], not {fraction}")
    s = np.asarray(score, float)
    ok = np.isfinite(s)
    n = int(ok.sum())
    upper, lower = np.zeros(len(s)), np.zeros(len(s))
    if n < 2:
        return upper, lower
    g = max(1, round(fraction * n))
    for sign, w in ((1, upper), (-1, lower)):
        v = np.where(ok, sign * s, -np.inf)
        cut = np.sort(v[ok])[::-1][g - 1]
        above = v > cut
        tied = v == cut
        w[above] = 1.0
        w[tied] = (g - above.sum()) / tied.sum()
    return upper, lower


def _upper_lower(Y: np.ndarray, fraction: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return per item (p_upper, p_lower, n_upper, n_lower) with the examinees' group weights."""
    total, _, _ = _scores(Y)
    wu, wl = group_weights(total, fraction)
    A = ~np.isnan(Y)
    y0 = np.where(A, Y, 0.0)
    nu, nl = wu @ A, wl @ A
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(nu > 0, (wu @ y0) / nu, np.nan), np.where(nl > 0, (wl @ y0) / nl, np.nan), nu, nl


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson r of the finite pairs; NaN when either side has no variance or fewer than 3 pairs."""
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return math.nan
    return float(np.corrcoef(x[ok], y[ok])[0, 1])


@shared_docs
@takes_columns("item", "examinee", "correct")
def item_statistics(responses: pd.DataFrame, *, fraction: float = 0.27, confidence: float = 0.95,
                    n_boot: int = 1000, seed: int = 0, columns: Columns = None) -> pd.DataFrame:
    """Return per item the difficulty p, the corrected point-biserial and the upper-lower index D (contract rows).

    ``n_items`` is the number of examinees who answered the item, ``n_failed`` those whose answer is
    missing. D's CI is a percentile bootstrap over examinees (``n_boot``; 0 = none).

    Parameters
    ----------
    responses : DataFrame
        A scored ``responses`` table (:func:`medeval_kit.psychometrics.score_responses`).
    fraction : float
        The share of examinees in the upper and in the lower group (Kelley's 27 %).
    {confidence}
    {n_boot}
    {seed}
    {columns}

    Returns
    -------
    DataFrame
        Contract rows keyed ``item, statistic`` (``difficulty``, ``point_biserial``, ``upper_lower``);
        the ``upper_lower`` rows add ``p_upper, p_lower, n_upper, n_lower, fraction``.

    Examples
    --------
    >>> from medeval_kit.psychometrics import synthetic_exam
    >>> exam = synthetic_exam(5, 100, seed=0)
    >>> item_statistics(exam.responses, n_boot=0)["statistic"].unique().tolist()
    ['difficulty', 'point_biserial', 'upper_lower']
    """
    Y, items, _ = _matrix(responses)
    A = ~np.isnan(Y)
    _, S, C = _scores(Y)
    rest = _rest(Y, S, C)
    pu, pl, nu, nl = _upper_lower(Y, fraction)
    boot = _boot_upper_lower(Y, fraction, n_boot, seed) if n_boot and Y.shape[0] >= 2 else None
    rows = []
    n_ex = Y.shape[0]
    for j, it in enumerate(items):
        a = A[:, j]
        n, k = int(a.sum()), float(np.nansum(Y[:, j]))
        miss = n_ex - n
        p = k / n if n else math.nan
        rows.append(result_row(p, wilson_interval(k, n, confidence=confidence) if n else (math.nan, math.nan),
                               "Wilson" if n else "", n_items=n, n_failed=miss,
                               note="" if n else "no answers", item=it, statistic="difficulty"))
        r = _pearson(Y[a, j], rest[a, j])
        note = ""
        if n and (p in (0.0, 1.0)):
            note = "no variance: every examinee " + ("right" if p == 1 else "wrong")
        elif n and not np.isfinite(r):
            note = "undefined: the rest score has no variance or fewer than 3 answers"
        ci = fisher_z_interval(r, n, confidence=confidence) if np.isfinite(r) else (math.nan, math.nan)
        rows.append(result_row(r, ci, "Fisher z" if np.isfinite(ci[0]) else "", n_items=n, n_failed=miss, note=note,
                               item=it, statistic="point_biserial"))
        d = pu[j] - pl[j]
        if boot is not None and np.isfinite(d):
            ci, method = percentile_interval(boot[:, j], confidence=confidence), \
                f"percentile bootstrap over examinees ({int(n_boot)} resamples)"
        else:
            ci, method = (math.nan, math.nan), ""
        rows.append(result_row(d, ci, method, n_items=n, n_failed=miss,
                               note="" if np.isfinite(d) else "no examinee in a group answered the item",
                               item=it, statistic="upper_lower", p_upper=pu[j], p_lower=pl[j], n_upper=nu[j],
                               n_lower=nl[j], fraction=fraction))
    return result_frame(rows, keys=["item", "statistic"])


def _boot_upper_lower(Y: np.ndarray, fraction: float, n_boot: int, seed: int) -> np.ndarray:
    """Return (n_boot, items) bootstrap replicates of D, resampling examinees."""
    rng = np.random.default_rng(seed)
    n = Y.shape[0]
    out = np.full((int(n_boot), Y.shape[1]), np.nan)
    for b in range(int(n_boot)):
        pu, pl, _, _ = _upper_lower(Y[rng.integers(0, n, n)], fraction)
        out[b] = pu - pl
    return out


def item_table(stats: pd.DataFrame) -> pd.DataFrame:
    """Return :func:`item_statistics` wide: one row per item with p, r_pbis and D and their CIs.

    Parameters
    ----------
    stats : DataFrame
        The result of :func:`item_statistics`.

    Returns
    -------
    DataFrame
        ``item``, ``p``, ``p_low``, ``p_high``, ``r_pbis`` (and its bounds), ``D`` (and its bounds),
        ``n_answered``, ``n_missing``.
    """
    need = ["item", "statistic", "estimate", "ci_low", "ci_high", "n_items", "n_failed"]
    missing = [c for c in need if c not in getattr(stats, "columns", ())]
    if missing:  # e.g. the responses themselves, passed where their statistics belong
        raise ParameterError(f"expected the result of item_statistics() (columns {need}); this table has no "
                             f"{missing}: compute item_statistics(responses) first")
    short = {"difficulty": "p", "point_biserial": "r_pbis", "upper_lower": "D"}
    parts = []
    for stat, name in short.items():
        d = stats[stats["statistic"] == stat].set_index("item")
        parts.append(d[["estimate", "ci_low", "ci_high"]].rename(
            columns={"estimate": name, "ci_low": f"{name}_low", "ci_high": f"{name}_high"}))
    base = stats[stats["statistic"] == "difficulty"].set_index("item")[["n_items", "n_failed"]].rename(
        columns={"n_items": "n_answered", "n_failed": "n_missing"})
    return pd.concat([*parts, base], axis=1).reset_index()


def _groups(values: pd.Series) -> list[tuple[object, np.ndarray]]:
    """Return (group key, row positions) per distinct non-missing value, sorted as ``groupby(sort=True)``.

    Row positions keep the table's order within each group, as the groups of ``groupby`` do; one
    factorisation replaces a sub-frame per group (the per-item pandas calls cost more than the statistics).

    Parameters
    ----------
    values : Series
        The grouping column (missing values belong to no group, as in ``groupby``).

    Returns
    -------
    list of tuple
        ``(key, positions)`` per group, keys in sorted order, positions an int array into ``values``.
    """
    codes, uniques = pd.factorize(values, sort=True)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
    return [(uniques[g], order[bounds[g]:bounds[g + 1]]) for g in range(len(uniques))]


def _strings(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Return (present mask, object array of ``str`` values; None where missing) of one column.

    Parameters
    ----------
    values : Series
        The column.

    Returns
    -------
    tuple of numpy.ndarray
        ``(present, strings)``: a bool mask and the values as ``str`` (``astype(str)`` of the present ones).
    """
    present = values.notna().to_numpy()
    out = np.full(len(values), None, dtype=object)
    out[present] = values[present].astype(str).to_numpy(dtype=object)
    return present, out


def _options(responses: pd.DataFrame, groups: list[tuple[object, np.ndarray]] | None = None) -> dict[str, list[str]]:
    """Return per item the option letters: offered ones, the key and every letter chosen."""
    groups = _groups(responses["item"]) if groups is None else groups
    has_key, keys = _strings(responses["key"])
    has_choice, choices = _strings(responses["choice"])
    has_offered, offered = _strings(responses["offered"]) if "offered" in responses.columns else (None, None)
    out: dict[str, list[str]] = {}
    for it, pos in groups:
        letters = set(keys[pos][has_key[pos]]) | set(choices[pos][has_choice[pos]])
        if offered is not None:
            for s in offered[pos][has_offered[pos]]:
                letters |= set(s)
        out[str(it)] = sorted(letters)
    return out


@shared_docs
@takes_columns("item", "examinee", "correct", "choice", "key", "offered")
def distractor_analysis(responses: pd.DataFrame, *, fraction: float = 0.27, nonfunctional: float = 0.05,
                        confidence: float = 0.95, columns: Columns = None) -> pd.DataFrame:
    """Return per item and option the share choosing it (Wilson CI), in the upper and lower groups, and its flags.

    Rows: ``item``, ``option``; ``estimate`` is the share of the examinees answering the item who chose
    the option; extras ``is_key``, ``n_chosen``, ``share_upper``, ``share_lower``, ``discrimination``
    (upper minus lower share: negative for a working distractor), ``functional`` (distractors only:
    share >= ``nonfunctional``). Options come from ``offered``, the key and the letters chosen.

    Parameters
    ----------
    responses : DataFrame
        A scored ``responses`` table with the chosen letters (``choice``, ``key``).
    fraction : float
        The share of examinees in the upper and in the lower group.
    nonfunctional : float
        A distractor chosen by fewer than this share is non-functional.
    {confidence}
    {columns}

    Returns
    -------
    DataFrame
        Contract rows keyed ``item, option`` with the extras above.

    Raises
    ------
    ParameterError
        There are no chosen letters.
    """
    if "choice" not in responses.columns or responses["choice"].isna().all():
        raise ParameterError("a distractor analysis needs the chosen letters (a 'choice' column)")
    Y, _, examinees = _matrix(responses)
    total, _, _ = _scores(Y)
    wu, wl = group_weights(total, fraction)
    w_up = dict(zip(examinees, wu))
    w_lo = dict(zip(examinees, wl))
    groups = _groups(responses["item"])
    opts = _options(responses, groups)
    # whole columns once (the per-item pandas calls cost more than the statistics); same values per row
    has_key, keys = _strings(responses["key"])
    has_choice, choices = _strings(responses["choice"])
    ex = responses["examinee"].astype(str)
    w_up_rows, w_lo_rows = ex.map(w_up).to_numpy(float), ex.map(w_lo).to_numpy(float)
    wilson = {}  # (k, n) -> interval: many options share counts
    rows = []
    for it, pos in groups:
        it = str(it)
        key = keys[pos][has_key[pos]]
        key = key[0] if len(key) else None
        ans = pos[has_choice[pos]]
        n, miss = len(ans), len(pos) - len(ans)
        wu_i, wl_i = w_up_rows[ans], w_lo_rows[ans]
        chosen = choices[ans]
        for o in opts[it]:
            chose = chosen == o if n else np.zeros(0, dtype=bool)
            k = int(chose.sum())
            su = float(wu_i @ chose / wu_i.sum()) if wu_i.sum() > 0 else math.nan
            sl = float(wl_i @ chose / wl_i.sum()) if wl_i.sum() > 0 else math.nan
            share = k / n if n else math.nan
            is_key = o == key
            if n and (k, n) not in wilson:
                wilson[k, n] = wilson_interval(k, n, confidence=confidence)
            rows.append(result_row(share, wilson[k, n] if n else (math.nan, math.nan),
                                   "Wilson" if n else "", n_items=n, n_failed=miss, note="" if n else "no answers",
                                   item=it, option=o, is_key=is_key, n_chosen=k, share_upper=su, share_lower=sl,
                                   discrimination=su - sl,
                                   functional=(pd.NA if is_key or not n else bool(share >= nonfunctional))))
    return result_frame(rows, keys=["item", "option"])


def distractor_efficiency(distractors: pd.DataFrame) -> pd.DataFrame:
    """Return per item the distractor efficiency: the share of its distractors that function (contract rows).

    ``n_items`` counts the item's distractors; extras ``n_functional``, ``nonfunctional_options`` (their
    letters) and ``key_rejected_by_upper`` (the upper group picks some distractor more often than the key).

    Parameters
    ----------
    distractors : DataFrame
        The result of :func:`distractor_analysis`.

    Returns
    -------
    DataFrame
        Contract rows keyed ``item``; extras ``n_functional``, ``nonfunctional_options``,
        ``key_share_upper``, ``top_distractor_share_upper``, ``key_rejected_by_upper``.
    """
    # whole columns once, then row positions per item (the per-item pandas calls cost more than the sums)
    is_key = distractors["is_key"].astype(bool).to_numpy()
    has_func = distractors["functional"].notna().to_numpy()
    func_all = np.zeros(len(distractors), dtype=bool)
    func_all[has_func] = distractors["functional"][has_func].astype(bool).to_numpy()
    share_up = pd.to_numeric(distractors["share_upper"]).to_numpy(dtype=float, na_value=np.nan)
    failed = pd.to_numeric(distractors["n_failed"]).to_numpy(dtype=float, na_value=np.nan)
    option = distractors["option"].astype(str).to_numpy(dtype=object)
    rows = []
    for it, pos in _groups(distractors["item"]):
        dis, key = pos[~is_key[pos]], pos[is_key[pos]]
        fpos = dis[has_func[dis]]
        func = func_all[fpos]
        n = len(func)
        key_up = float(share_up[key[0]]) if len(key) else math.nan
        up = share_up[dis][~np.isnan(share_up[dis])]
        top_up = float(up.max()) if len(up) else math.nan
        rejected = bool(top_up > key_up) if np.isfinite(key_up) and np.isfinite(top_up) else pd.NA
        fl = failed[pos][~np.isnan(failed[pos])]
        rows.append(result_row(func.mean() if n else math.nan, n_items=n,
                               n_failed=int(fl.max()) if len(fl) else 0,
                               note="" if n else "no distractors or no answers", item=str(it),
                               n_functional=int(func.sum()),
                               nonfunctional_options="".join(option[fpos[~func]]) if n else "",
                               key_share_upper=key_up, top_distractor_share_upper=top_up,
                               key_rejected_by_upper=rejected))
    return result_frame(rows, keys=["item"])


def _alpha(X: np.ndarray) -> float:
    """Cronbach's alpha (= KR-20 for 0/1 items) of a complete examinee x item matrix."""
    k = X.shape[1]
    if k < 2 or X.shape[0] < 2:
        return math.nan
    tv = X.sum(axis=1).var(ddof=1)
    if tv == 0:
        return math.nan
    return float(k / (k - 1) * (1 - X.var(axis=0, ddof=1).sum() / tv))


@shared_docs
@takes_columns("item", "examinee", "correct")
def reliability(responses: pd.DataFrame, *, confidence: float = 0.95, n_boot: int = 0, seed: int = 0,
                columns: Columns = None) -> pd.DataFrame:
    """Return KR-20 (Cronbach's alpha of 0/1 items) of the form and alpha with each item deleted (contract rows).

    Computed on the examinees who answered every item (``n_items``; ``n_failed`` = examinees left
    out for a missing answer). CI: Feldt's F interval (Feldt, Woodruff & Salih 1987), or a percentile
    bootstrap over examinees when ``n_boot`` > 0. Rows: ``item`` = ``"(form)"`` and ``statistic`` =
    ``kr20``, then one ``alpha_if_deleted`` row per item.

    Parameters
    ----------
    responses : DataFrame
        A scored ``responses`` table.
    {confidence}
    n_boot : int, default 0
        Bootstrap resamples of examinees for the CI; ``0`` gives Feldt's F interval.
    {seed}
    {columns}

    Returns
    -------
    DataFrame
        Contract rows keyed ``item, statistic``; extra ``n_form_items``.

    Examples
    --------
    >>> from medeval_kit.psychometrics import synthetic_exam
    >>> kr = reliability(synthetic_exam(10, 200, seed=0).responses).iloc[0]
    >>> kr["statistic"], kr["ci_method"]
    ('kr20', 'Feldt F')
    """
    Y, items, _ = _matrix(responses)
    complete = ~np.isnan(Y).any(axis=1)
    X = Y[complete]
    n, k = X.shape
    dropped = int((~complete).sum())
    a = _alpha(X)
    note = "" if np.isfinite(a) else "undefined: fewer than 2 items or examinees, or no variance in total scores"
    if n_boot and np.isfinite(a):
        rng = np.random.default_rng(seed)
        reps = np.array([_alpha(X[rng.integers(0, n, n)]) for _ in range(int(n_boot))])
        ci, method = percentile_interval(reps, confidence=confidence), \
            f"percentile bootstrap over examinees ({int(n_boot)} resamples)"
    elif np.isfinite(a) and n > 1:
        d1, d2 = n - 1, (n - 1) * (k - 1)
        g = 1 - confidence
        ci = (1 - (1 - a) * sps.f.ppf(1 - g / 2, d1, d2), 1 - (1 - a) * sps.f.ppf(g / 2, d1, d2))
        method = "Feldt F"
    else:
        ci, method = (math.nan, math.nan), ""
    rows = [result_row(a, ci, method, n_items=n, n_failed=dropped, note=note, item="(form)", statistic="kr20",
                       n_form_items=k)]
    for j, it in enumerate(items):
        aj = _alpha(np.delete(X, j, axis=1))
        rows.append(result_row(aj, n_items=n, n_failed=dropped, note="" if np.isfinite(aj) else "undefined",
                               item=it, statistic="alpha_if_deleted", n_form_items=k - 1))
    return result_frame(rows, keys=["item", "statistic"])


def item_flags(stats: pd.DataFrame, distractors: pd.DataFrame | None = None, *, too_easy: float = 0.90,
               too_hard: float = 0.30, min_discrimination: float = 0.0, low_discrimination: float = 0.20,
               nonfunctional: float = 0.05) -> pd.DataFrame:
    """Return one row per item: p, r_pbis, D, distractor efficiency and the review flags (see module doc).

    Flag columns (bool, NA when the statistic is undefined): ``too_easy`` (p > too_easy), ``too_hard``
    (p < too_hard), ``negative_discrimination`` (r_pbis < min_discrimination), ``low_discrimination``
    (r_pbis < low_discrimination), ``nonfunctional_distractors`` (some distractor chosen by fewer than
    ``nonfunctional``), ``key_rejected_by_upper``; ``flags`` lists the raised ones.

    Parameters
    ----------
    stats : DataFrame
        The result of :func:`item_statistics`.
    distractors : DataFrame, optional
        The result of :func:`distractor_analysis`; without it the distractor flags are left out.
    too_easy : float
        Flag p above this.
    too_hard : float
        Flag p below this.
    min_discrimination : float
        Flag r_pbis below this as negative discrimination.
    low_discrimination : float
        Flag r_pbis below this as low discrimination.
    nonfunctional : float
        A distractor chosen by fewer than this share is non-functional.

    Returns
    -------
    DataFrame
        The wide item table (:func:`item_table`) with ``distractor_efficiency``, ``nonfunctional_options``,
        the flag columns, ``flags`` and ``n_flags``.
    """
    wide = item_table(stats)
    out = wide.copy()

    def cmp(values, fn):
        return [pd.NA if not np.isfinite(v) else bool(fn(v)) for v in values.astype(float)]

    out["too_easy"] = cmp(wide["p"], lambda v: v > too_easy)
    out["too_hard"] = cmp(wide["p"], lambda v: v < too_hard)
    out["negative_discrimination"] = cmp(wide["r_pbis"], lambda v: v < min_discrimination)
    out["low_discrimination"] = cmp(wide["r_pbis"], lambda v: v < low_discrimination)
    flag_cols = ["too_easy", "too_hard", "negative_discrimination", "low_discrimination"]
    if distractors is not None and len(distractors):
        d = distractors.copy()
        d["functional"] = [pd.NA if bool(k) or not np.isfinite(s) else bool(s >= nonfunctional)
                           for k, s in zip(d["is_key"], d["estimate"].astype(float))]
        eff = distractor_efficiency(d).set_index("item")
        out = out.set_index("item")
        out["distractor_efficiency"] = eff["estimate"]
        out["nonfunctional_options"] = eff["nonfunctional_options"].fillna("")
        out["nonfunctional_distractors"] = [pd.NA if not np.isfinite(e) else bool(e < 1)
                                            for e in out["distractor_efficiency"].astype(float)]
        out["key_rejected_by_upper"] = eff["key_rejected_by_upper"]
        out = out.reset_index()
        flag_cols += ["nonfunctional_distractors", "key_rejected_by_upper"]
    out["flags"] = [", ".join(c for c in flag_cols if r[c] is True or r[c] is np.True_)
                    for _, r in out[flag_cols].astype(object).iterrows()]
    out["n_flags"] = [len(f.split(", ")) if f else 0 for f in out["flags"]]
    return out


FLAG_COLUMNS = ("too_easy", "too_hard", "negative_discrimination", "low_discrimination", "nonfunctional_distractors",
                "key_rejected_by_upper")


@shared_docs
def flag_counts(flags: pd.DataFrame, *, by: str | None = None, confidence: float = 0.95) -> pd.DataFrame:
    """Return per flag (and ``by`` group) the share of items raising it (Wilson CI) as contract rows.

    ``n_items`` counts the items where the flag is defined; ``n_failed`` those where it is not (NA: the
    statistic behind it is undefined, e.g. an item without variance has no discrimination).

    Parameters
    ----------
    flags : DataFrame
        The result of :func:`item_flags`.
    by : str, optional
        A column to count per (e.g. ``source``).
    {confidence}

    Returns
    -------
    DataFrame
        Contract rows keyed ``by`` (when given) and ``flag``; extra ``n_flagged``.
    """
    groups = [((), flags)] if by is None else [((k,), g) for k, g in flags.groupby(by, sort=True)]
    rows = []
    for key, g in groups:
        for f in FLAG_COLUMNS:
            if f not in g.columns:
                continue
            v = g[f].dropna().astype(bool)
            n, k = len(v), int(v.sum())
            rows.append(result_row(k / n if n else math.nan,
                                   wilson_interval(k, n, confidence=confidence) if n else (math.nan, math.nan),
                                   "Wilson" if n else "", n_items=n, n_failed=len(g) - n,
                                   note="" if n else "undefined for every item", flag=f, n_flagged=k,
                                   **({by: key[0]} if by else {})))
    return result_frame(rows, keys=([by] if by else []) + ["flag"])
