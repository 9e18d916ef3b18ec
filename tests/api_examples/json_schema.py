"""Example calls for the API tests: ``json_schema`` (the JSON Schema validator; nothing here is a statistic)."""

OTHER = {"validator_class": "helper"}
