"""How the stages are declared and run: the stage table, the dvc.yaml written from it and its resolution into the DAG
engines, one-off runs, worker processes."""
