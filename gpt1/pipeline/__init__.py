"""How the stages are declared and run: the stage table, its resolution into the DAG engines, one-off runs, worker processes."""
