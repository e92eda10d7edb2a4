"""Scale-out of noop replicas behind HAProxy and nginx (python -m bench.scale.run_scale)."""
