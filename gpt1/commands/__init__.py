"""The commands that are not pipeline stages: benchmark, plan, generate, predict."""
