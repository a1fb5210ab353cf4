"""The embedded default's adapters on one SQLite file: event store and seat tokens."""
