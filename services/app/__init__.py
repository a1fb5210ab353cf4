"""The application layer: the game service and what it answers, independent of HTTP."""
