"""The HTTP API: Litestar controllers per resource, dependencies, errors, middleware."""
