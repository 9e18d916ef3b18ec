"""LLM-judge protocols: every protocol writes the same tidy ``judgments`` table through one engine.

``engine`` sends a protocol's calls, parses each reply with the LLM layer's rule and writes the rows
(``item, judge, protocol, criterion, order, repeat, raw, verdict, score, parse_status``, then
``parse_error, template, template_version, temperature, seed, call, cached, latency_s, cost_usd`` and
the protocol's own columns). ``registry`` maps a protocol name to its run function, default template,
reply schema, input check and analysis hooks (``@protocol``); ``protocols/`` holds one file per
protocol: ``pairwise`` (two responses in both orders, verdicts un-swapped to model terms),
``rubric`` (pointwise aspects), ``multi_answer`` and ``multi_response`` (k texts in one seeded,
recorded shuffle), ``reference`` (graded against a reference answer). ``items`` reads the user's own
items file as a protocol's input table (:func:`read_items`). ``summary`` reads a table:
parse failures (counted, never turned into ties), scores, order effects, agreement with human labels;
``aspects`` selects rubric aspects against a human preference (MCQG-SRefine Table 2); ``aspect_search`` runs
the search at the paper's scale (compiled, ``_kernels``) and measures its optimism on planted/null synthetic data.
"""

from medeval_kit.schemas import PROTOCOLS

from . import protocols  # noqa: F401  (registers every protocol)
from .aspect_search import (
                            feasible_max_k,
                            human_preferences,
                            optimism_summary,
                            read_aspect_scores,
                            round_differences,
                            score_differences,
                            search_optimism,
                            selection_table,
)
from .aspects import AspectSelection, AspectSelections, aspect_differences, select_aspects, select_aspects_all
from .engine import JUDGMENT_COLUMNS, JudgeError, shuffle_seed
from .items import item_columns, protocol_options, read_items
from .protocols.multi_answer import judge_multi_answer
from .protocols.multi_response import judge_multi_response
from .protocols.pairwise import judge_pairwise, pairs_from_bundle
from .protocols.pairwise_calibrated import judge_pairwise_mec
from .protocols.reference import judge_reference
from .protocols.rubric import judge_rubric
from .registry import Protocol, check_protocol, default_templates, protocol, protocol_of, run_protocol, unregister
from .registry import names as protocol_names
from .summary import (
                            acc_tuple_triple,
                            human_agreement,
                            order_effects,
                            parse_summary,
                            rubric_scores,
                            score_summary,
                            to_annotations,
                            verdict_counts,
)

__all__ = [
    "PROTOCOLS",
    "JUDGMENT_COLUMNS",
    "JudgeError",
    "Protocol",
    "protocol",
    "unregister",
    "protocol_names",
    "protocol_of",
    "default_templates",
    "judge_pairwise",
    "judge_pairwise_mec",
    "judge_rubric",
    "judge_multi_answer",
    "judge_reference",
    "judge_multi_response",
    "run_protocol",
    "read_items",
    "item_columns",
    "protocol_options",
    "pairs_from_bundle",
    "check_protocol",
    "parse_summary",
    "rubric_scores",
    "acc_tuple_triple",
    "to_annotations",
    "shuffle_seed",
    "aspect_differences",
    "select_aspects",
    "select_aspects_all",
    "score_differences",
    "read_aspect_scores",
    "human_preferences",
    "round_differences",
    "search_optimism",
    "optimism_summary",
    "selection_table",
    "feasible_max_k",
    "AspectSelection",
    "AspectSelections",
    "order_effects",
    "human_agreement",
    "verdict_counts",
    "score_summary",
]
