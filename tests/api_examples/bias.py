"""Example calls of the public ``bias`` functions (see ``tests/api_examples/__init__.py``)."""

import pandas as pd

from medeval_kit import bias


def _scored(t):
    """A scoring judge's calls (both orders, 3 samples) and the humans' labels, renamed like the shared tables."""
    calls, humans = bias.synthetic_scored_pairwise(40, samples=3, seed=1)
    return t.own(calls), t.own(humans)


def _calibrated(t):
    calls, humans = _scored(t)
    return bias.calibrate(calls, columns=t.columns), humans


def _labels(t):
    """Resolved pairwise labels with the ``inconsistent`` code (MCQG-SRefine Table 19's shape)."""
    from medeval_kit.datasets.synthetic import synthetic_panel

    a = synthetic_panel(n_items=40, n_humans=3, n_judges=2, seed=1)
    flipped = ~a["item"].str[-1].isin(list("02468")) & a["rater_kind"].ne("human")
    return t.own(a.assign(criterion="overall", label=a["label"].where(~flipped, "inconsistent")))


def _slots(t):
    """A 3-slot protocol: one call per item, the chosen slot."""
    return t.own(pd.DataFrame({"item": [f"i{k}" for k in range(30)], "judge": "j", "chosen_slot": [1, 2, 3, 1, 1] * 6,
                               "parse_status": "ok"}))


def _slot_scores(t):
    """Three responses per question scored in one prompt, shown in two shuffles."""
    rows = [{"question_item": f"q{q}", "item": f"q{q}r{r}", "position": (r + s) % 3 + 1, "score": float(r + (r + s) % 3 == 0),
             "judge": "j", "repeat": s} for q in range(12) for r in range(3) for s in range(2)]
    return t.own(pd.DataFrame(rows))


def _responses(t):
    return t.own(pd.DataFrame({"item": ["i1", "i1", "i2", "i2"], "slot": ["A", "B", "A", "B"],
                               "model": ["m1", "m2", "m2", "m1"], "text": ["a b c", "a", "a b", "a b c d"]}))


def _pair_labels(t):
    return t.own(pd.DataFrame({"item": ["i1", "i1", "i2", "i2"], "rater": ["m1", "m2", "m1", "m2"],
                               "label": ["A", "A", "B", "tie"]}))


EXAMPLES = {
    "position_bias": lambda t: bias.position_bias(t.judgments, n_boot=50, columns=t.columns),
    "flip_rate_from_labels": lambda t: bias.flip_rate_from_labels(_labels(t), columns=t.columns),
    "agreement_on_consistent": lambda t: bias.agreement_on_consistent(_labels(t), "h1", columns=t.columns),
    "slot_preference": lambda t: bias.slot_preference(_slots(t), n_slots=3, columns=t.columns),
    "slot_score_effect": lambda t: bias.slot_score_effect(_slot_scores(t), n_boot=50, columns=t.columns),
    "letter_balance": lambda t: bias.letter_balance(t.own(pd.DataFrame({"answer": list("ABCDAB")})), letters="ABCD",
                                                    columns=t.columns),
    "length_bias": lambda t: bias.length_bias(t.judgments, columns=t.columns),
    "longer_preferred_rate": lambda t: bias.longer_preferred_rate(t.judgments, columns=t.columns),
    "length_controlled_win_rate": lambda t: bias.length_controlled_win_rate(t.judgments, columns=t.columns),
    "self_preference": lambda t: bias.self_preference(
        t.own(bias.simulate_self_preference(60, models=["gpt-4o", "claude-3"], raters=["gpt-4o", "claude-3"],
                                            seed=0)),
        lineage={"gpt-4o": {"family": "gpt"}, "claude-3": {"family": "claude"}}, n_boot=50, columns=t.columns),
    "calibration_effect": lambda t: bias.calibration_effect(*_calibrated(t), n_boot=50, columns=t.columns),
    "budget_curve": lambda t: bias.budget_curve(*_calibrated(t), n_boot=50, columns=t.columns),
    # tables that are not statistics (kinds below): run here so that the column test compares them
    "calibrate": lambda t: bias.calibrate(_scored(t)[0], columns=t.columns),
    "pairwise_from_annotations": lambda t: bias.pairwise_from_annotations(
        t.own(t.annotations if not t.renamed else t.annotations.rename(columns=lambda c: c[3:].lower()))
        .assign(**{"My CRITERION" if t.renamed else "criterion": "overall"}), columns=t.columns),
    "pairwise_to_response_scores": lambda t: bias.pairwise_to_response_scores(_pair_labels(t), _responses(t),
                                                                              columns=t.columns),
    "response_lengths": lambda t: bias.response_lengths(_responses(t), columns=t.columns),
}

OTHER = {
    "calibrate": "helper",
    "review_queue": "helper",
    "synthetic_scored_pairwise": "data",
    "read_judgments": "reader",
    "check_pairwise": "helper",
    "pairwise_from_annotations": "helper",
    "pairwise_to_response_scores": "helper",
    "position_bias_wide": "helper",
    "response_lengths": "helper",
    "simulate_length_bias": "data",
    "load_lineage": "data",
    "simulate_self_preference": "data",
}
