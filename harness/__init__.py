"""Real servers for the tests and the benchmarks: the Bura service as a process, a Redis
of one's own, a TCP proxy that injects network faults, scratch PostgreSQL databases, and a
Server-Sent Events reader. Neither product code nor tests: both tests/ and bench/ use it,
and nothing here imports either."""
