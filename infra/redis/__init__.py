"""The hint bus on Redis pub/sub, for replicas that share the work."""
