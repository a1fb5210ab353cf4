"""The rules of Bura as a pure event-sourced aggregate: no I/O, no clock, no randomness."""
