"""A plugin whose names clash with built-in ones."""
