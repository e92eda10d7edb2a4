"""The seed scheduler's batch shapes (python -m bench.sim.seed_batch_shapes)."""
