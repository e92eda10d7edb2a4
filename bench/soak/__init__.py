"""The fault-injection soak of `tokenbatch serve --backend noop` (python -m bench.soak.soak)."""
