"""Files written and read safely: atomic writes and claims, text files with clear decoding errors, sha256."""
