"""repro: paper reproduction. Its tables report printed numbers beside ours, not statistics."""

OTHER = {
    "parse_printed": "helper", "load_paper": "data", "paper_ids": "data", "to_frame": "helper",
    "study_numbers": "data", "published_numbers": "data", "papers_for": "data", "paper_contradictions": "data",
    "load_study": "data", "judging_inputs": "data", "judging_humans": "data", "pandalm_humans": "data",
    "pandalm_reference_scores": "data", "rounds_to": "helper", "truncates_to": "helper", "matches": "helper",
    "decide": "helper", "cause_problem": "helper", "validate_paper_file": "helper",
}
