"""Agreement between raters, with honest uncertainty, and the designs that ask whether an LLM judge can
replace the humans. Everything works on a long ``annotations`` table (``item``, ``rater``, ``label``
[, ``criterion``, ``rater_kind``]): ``data`` turns it into a code matrix, ``registry`` holds every
coefficient (one decorated function each, in ``coefficients``, ``alpha`` and ``icc``; ``forms`` computes
label coefficients on a pair's table or many raters' counts; ``weights`` the agreement weights), and
``engine``/``result`` give the item bootstrap and the result row (on :mod:`medeval_kit.stats`).
``compute`` is :func:`agreement` and one public function per coefficient (``agreement.cohen_kappa`` ...);
``report`` makes tidy tables; ``consensus`` majority votes and ensembles; ``designs`` (judge vs humans),
``ceiling`` (the human ceiling and MedQADE's design), ``coverage`` (the equal-noise simulation),
``alt_test`` (Calderon et al. 2025) and ``validation`` answer "can this judge replace the humans?";
``panel`` says who is human; ``paradox`` explains high agreement with low kappa; ``io`` reads the user's
files. Every result carries the result contract (``estimate, ci_low, ci_high, ci_method, n_items,
n_failed, note``); an undefined coefficient is NaN with a ``note``. Plots are in
:mod:`medeval_kit.viz.agreement`, the commands in :mod:`medeval_kit.cli.agreement`."""

from __future__ import annotations  # noqa: I001 - the first import below fixes the registration order

# registration order (label coefficients, alpha, ICC forms) is the order of METRICS and of the CLI's choices
from medeval_kit.agreement import coefficients  # noqa: F401
from medeval_kit.agreement import alpha, icc as _icc_forms, registry  # noqa: F401
from medeval_kit.agreement.alt_test import AltTestError, AltTestResult, alt_test
from medeval_kit.agreement.ceiling import human_ceiling, judge_vs_ceiling
from medeval_kit.agreement.comparison import JudgeComparison
from medeval_kit.agreement.compute import agreement, fleiss_kappa_by_category, icc, public_function
from medeval_kit.agreement.consensus import ensembles, majority_vote
from medeval_kit.agreement.coverage import equal_noise_coverage
from medeval_kit.agreement.data import MAX_CATEGORIES, AgreementError
from medeval_kit.agreement.designs import DESIGNS, compare_designs, judge_vs_humans
from medeval_kit.agreement.io import LabelWarning, check_labels, read_annotations, read_checked, user_study
from medeval_kit.agreement.panel import PanelError, StudyInputs, describe_raters, resolve_panel
from medeval_kit.agreement.paradox import kappa_from_p_c, landis_koch, prevalence_bias_indices
from medeval_kit.agreement.registry import REGISTRY, Coefficient, coefficient
from medeval_kit.agreement.report import DEFAULT_METRICS, agreement_report, agreement_table, pairwise_matrix
from medeval_kit.agreement.result import AgreementResult
from medeval_kit.agreement.validation import JudgeValidation, validate_judges


def _wrapped(name: str) -> bool:
    """Coefficients reached as ``agreement.<name>`` (the ICC forms go through :func:`icc`)."""
    return name in REGISTRY and REGISTRY[name].family != "icc"


def __getattr__(name: str):
    """``METRICS`` and ``agreement.<coefficient>(df, ...)`` read the registry at access time."""
    if name == "METRICS":
        return tuple(registry.names())
    if _wrapped(name):
        return public_function(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"METRICS"} | {n for n in REGISTRY if _wrapped(n)})


__all__ = [
    "AgreementError", "AgreementResult", "METRICS", "MAX_CATEGORIES", "DEFAULT_METRICS", "DESIGNS",
    "REGISTRY", "Coefficient", "coefficient",
    "agreement", "agreement_table", "agreement_report", "pairwise_matrix", "fleiss_kappa_by_category", "icc",
    "majority_vote", "ensembles", "human_ceiling", "judge_vs_ceiling", "judge_vs_humans", "JudgeComparison",
    "compare_designs", "equal_noise_coverage", "prevalence_bias_indices", "landis_koch", "kappa_from_p_c",
    "read_annotations", "read_checked", "check_labels", "LabelWarning", "user_study", "StudyInputs",
    "PanelError", "resolve_panel", "describe_raters",
    "alt_test", "AltTestResult", "AltTestError", "validate_judges", "JudgeValidation",
]
__all__ += [n for n in REGISTRY if _wrapped(n)]  # agreement.cohen_kappa ...: one function per coefficient
