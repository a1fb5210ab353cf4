"""The application: game service, projector, HTTP API, CLI, config."""
