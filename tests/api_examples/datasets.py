"""Example calls for the API tests: ``datasets`` (bundled data and file readers; nothing here is a statistic)."""

OTHER = {
    "load_grounded_synth": "data",
    "load_medqg_questions": "data",
    "load_medqg_rounds": "data",
    "load_medqg_table19": "data",
    "load_srefine_inputs": "data",
    "load_mmlu_pro_replication": "data",
    "load_pandalm": "data",
    "read_json": "reader",
    "read_jsonl": "reader",
    "read_table": "reader",
    "sniff_text_file": "helper",
}
