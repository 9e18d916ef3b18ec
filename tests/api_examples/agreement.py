"""Example calls of ``medeval_kit.agreement``'s public statistics (see ``tests/api_examples/__init__.py``)."""

from __future__ import annotations

import pandas as pd

from medeval_kit import agreement as ag

_B = dict(n_boot=50, seed=0)


def _two(t) -> pd.DataFrame:
    """Two physicians: the two-rater forms (reference-based coefficients, correlations)."""
    a = t.annotations
    rater = (t.columns or {}).get("rater", "rater")
    return a[a[rater].isin(["h1", "h2"])]


def _numeric(t) -> pd.DataFrame:
    """Two physicians with their labels as scores 1-3 (correlations, ICC)."""
    two = _two(t)
    label = (t.columns or {}).get("label", "label")
    return two.assign(**{label: two[label].map({"A": 1, "B": 3, "tie": 2}).astype(float)})


def _coefficient(name: str):
    coef = ag.REGISTRY[name]
    data = _numeric if coef.level == "interval" or coef.default_weights else _two if coef.reference else None

    def call(t):
        df = data(t) if data else t.annotations
        return getattr(ag, name)(df, columns=t.columns, **_B)

    return call


EXAMPLES = {
    **{name: _coefficient(name) for name in ag.functions.__all__},
    "majority_vote": lambda t: ag.majority_vote(t.annotations, columns=t.columns),
    "agreement": lambda t: ag.agreement(t.annotations, "fleiss_kappa", columns=t.columns, **_B),
    "agreement_table": lambda t: ag.agreement_table(t.annotations, ["cohen_kappa", "fleiss_kappa"],
                                                    columns=t.columns, **_B),
    "agreement_report": lambda t: ag.agreement_report(t.annotations, metrics=["cohen_kappa"], pairwise=True,
                                                      ceiling=True, columns=t.columns, **_B),
    "pairwise_matrix": lambda t: ag.pairwise_matrix(t.annotations, columns=t.columns, **_B),
    "fleiss_kappa_by_category": lambda t: ag.fleiss_kappa_by_category(t.annotations, columns=t.columns, **_B),
    "icc": lambda t: ag.icc(_numeric(t), form="icc2", columns=t.columns, n_boot=0),
    "ensembles": lambda t: ag.ensembles(t.annotations, columns=t.columns, **_B),
    "human_ceiling": lambda t: ag.human_ceiling(t.annotations, columns=t.columns, **_B),
    "judge_vs_ceiling": lambda t: ag.judge_vs_ceiling(t.annotations, columns=t.columns, **_B),
    "judge_vs_humans": lambda t: ag.judge_vs_humans(t.annotations, columns=t.columns, **_B),
    "compare_designs": lambda t: ag.compare_designs(t.annotations, columns=t.columns, **_B),
    "equal_noise_coverage": lambda t: ag.equal_noise_coverage(2, panels=["two"], designs=["loo"], n_items=30,
                                                              n_boot=20),
    "prevalence_bias_indices": lambda t: ag.prevalence_bias_indices(_two(t), columns=t.columns),
    "alt_test": lambda t: ag.alt_test(t.annotations, columns=t.columns, min_items_per_human=10,
                                      accept_label_warnings=True),
    "validate_judges": lambda t: ag.validate_judges(t.annotations, ["h1", "h2", "h3"], ["llm1", "llm2"],
                                                    columns=t.columns, **_B),
}

OTHER = {
    "coefficient": "registry",
    "majority_vote": "helper",  # the consensus as a new rater in annotations form: a table, not a statistic
    "landis_koch": "helper",
    "kappa_from_p_c": "helper",
    "describe_raters": "helper",
    "resolve_panel": "helper",
    "check_labels": "helper",
    "read_annotations": "reader",
    "read_checked": "reader",
    "read_study": "reader",
}
