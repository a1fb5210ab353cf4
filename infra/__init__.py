"""Adapters: event stores (PostgreSQL, SQLite), buses (Redis, in-process), migrations."""
