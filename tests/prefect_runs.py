"""Reading what a test run left on its Prefect server."""

from __future__ import annotations


def flow_runs_tagged(client, tag: str) -> list:
    """The flow runs carrying ``tag`` (a dataset's name: the CLI tags its runs with it),
    read with a filter: a session's server holds more runs than one unfiltered page."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterTags

    return client.read_flow_runs(flow_run_filter=FlowRunFilter(tags=FlowRunFilterTags(all_=[tag])))
