"""The in-process hint bus of the embedded default (one process)."""
