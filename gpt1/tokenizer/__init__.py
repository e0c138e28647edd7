"""GPT-1's BPE and the encoded corpus."""
