"""Adapters: the ports the game service needs (infra/ports) and their implementations on
PostgreSQL, SQLite, Redis and in memory."""
