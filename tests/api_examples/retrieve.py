"""Example calls for the API tests: ``retrieve`` (the retriever is a class; nothing here is a statistic)."""

EXAMPLES: dict = {}
OTHER: dict = {}
