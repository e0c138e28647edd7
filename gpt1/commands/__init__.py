"""The commands that are not pipeline stages: benchmark, generate, predict."""
