"""The labelling core, with no Prefect in it: records in, label problems out, connected
components and batches, incremental regions, run metrics, reports, evaluation, sampling,
provenance. May import the store, similarity and solvers; never flows or the application."""
