"""Files written and read safely (atomic writes and claims, text files with clear decoding errors, sha256), and
text work over every core in worker processes (parallel.py)."""
