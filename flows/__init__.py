"""The pipeline as Prefect flows and tasks (ingest, build edges, export, solve, write back;
incremental runs; artifacts; runners). May import the labelling core, the store, similarity
and solvers; never the application (``graphlabel``)."""
