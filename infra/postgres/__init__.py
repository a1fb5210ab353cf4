"""The production adapters on PostgreSQL (asyncpg): event store, seat tokens, migrations."""
