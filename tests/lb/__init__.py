"""Replicas behind HAProxy and nginx on loopback (python -m tests.lb.loopback_balancers)."""
