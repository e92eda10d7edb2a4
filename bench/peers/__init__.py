"""Comparisons with peer servers and runtimes; the load client is python -m bench.peers.load_client."""
