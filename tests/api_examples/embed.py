"""Example calls for the API tests: ``embed``."""

EXAMPLES = {
    "mean_pairwise_cosine": lambda t: __import__("medeval_kit.embed", fromlist=["x"]).mean_pairwise_cosine(
        [[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]),
}
OTHER = {
    "get_embedder": "helper",
    "cosine_similarity_matrix": "helper",
    "cosine_distance_matrix": "helper",
}
