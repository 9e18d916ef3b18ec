"""A plugin that fails on import."""
