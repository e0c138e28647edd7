"""One thin module per DAG stage: read params, call the library, write the stage's outputs.

A stage never imports another stage (tests/test_layout.py)."""
