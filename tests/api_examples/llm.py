"""The LLM layer has no statistics: a client, its requests and replies, costs and parsing."""

OTHER = {
    "get_client": "llm", "cost_of": "helper", "default_cache_path": "helper", "estimate_cost": "llm",
    "extract_json": "helper", "load_prices": "data", "make_provider": "registry", "parse_model": "helper",
    "parse_reply": "helper", "price_for": "helper", "provider": "registry", "provider_names": "registry",
    "redact": "helper", "reparse": "llm", "run_spend": "llm", "to_frame": "llm", "unregister": "registry",
}
