"""Paths of the hand-built files in the formats other tools write (tests/fixtures/formats/)."""

from pathlib import Path

FX = Path(__file__).parent / "fixtures" / "formats"
PAIR = FX / "mtbench" / "gpt-4_pair.jsonl"
SINGLE = FX / "mtbench" / "gpt-4_single.jsonl"
HUMAN = FX / "mtbench" / "human_judgments.json"
ALPACA = FX / "alpaca_eval" / "annotations.json"
HEALTH = FX / "healthbench" / "meta_eval.jsonl"
PROMPTFOO = FX / "promptfoo" / "results.json"
INSPECT_JSON = FX / "inspect" / "log.json"
INSPECT_MEMBERS = FX / "inspect" / "eval_members"
