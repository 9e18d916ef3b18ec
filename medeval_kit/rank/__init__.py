"""Rankings from pairwise judgments, and whether a judge ranks models like the physicians do.

``comparisons`` / ``read_comparisons`` turn verdicts (A / B / tie, or the winner's name) into the tidy
comparisons table; ``rank_models`` fits Bradley-Terry strengths per judge (ties as Davidson's tie
parameter, half a win, or dropped) with item-bootstrap CIs on strengths, ranks and the win-probability
matrix; ``rank_agreement`` (Kendall tau, Spearman rho, top-k overlap) and ``rank_flips`` compare a judge's
ranking with a reference's on paired draws; ``elo_ratings`` / ``elo_spread`` show Elo's dependence on the
order of the games, for comparison only.

>>> from medeval_kit import rank
>>> c = rank.comparisons(rank.demo_comparisons(), columns={"item": "case_id", "judge": "physician_group",
...     "model_a": "response_a_model", "model_b": "response_b_model", "verdict": "winner"})
>>> res = rank.rank_models(c, n_boot=200)
>>> res.wide("rank")["physicians"].to_dict()["model_w"]
1.0
"""

from .compare import rank_agreement, rank_flips
from .data import (
                   COLUMNS,
                   MODEL_TERMS,
                   VERDICT_TERMS,
                   VERDICTS,
                   comparisons,
                   comparisons_from_bundle,
                   comparisons_from_counts,
                   demo_comparisons,
                   read_comparisons,
)
from .elo import elo_ratings, elo_spread
from .models import TIES, connected, fit_bradley_terry, fit_davidson, graph_problem, information, outcome_probabilities
from .ratings import TIE_LABELS, RankResult, prior_label, rank_models

__all__ = ["COLUMNS", "VERDICTS", "VERDICT_TERMS", "MODEL_TERMS", "TIES", "TIE_LABELS", "comparisons", "read_comparisons", "comparisons_from_counts",
           "comparisons_from_bundle", "demo_comparisons", "rank_models", "RankResult", "rank_agreement", "rank_flips",
           "elo_ratings", "elo_spread", "connected", "graph_problem", "prior_label", "fit_bradley_terry", "fit_davidson", "information",
           "outcome_probabilities"]
