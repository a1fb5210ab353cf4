"""The ports: one module per port, each a Protocol with the record types that cross it.

They live here, on the adapters' side, so that imports point one way only
(domain <- infra <- services); the game service depends on these Protocols, never on an
adapter."""
