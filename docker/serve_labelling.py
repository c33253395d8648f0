"""Serve the labelling flow as a scheduled Prefect deployment (the compose ``labeller``).

Runs ``flows.labelling.labelling_flow`` on ``LABEL_CRON`` against ``GRAPHLABEL_STORE``
(Neo4j in the compose file) for ``LABEL_DATASET`` with ``LABEL_SOLVER`` and ``LABEL_K``;
the run can also be started by hand from the Prefect UI.
"""

from __future__ import annotations

import os

from flows.labelling import labelling_flow


def main() -> None:
    labelling_flow.serve(
        name="scheduled-labelling",
        cron=os.environ.get("LABEL_CRON", "0 3 * * *"),
        parameters={
            "dataset": os.environ.get("LABEL_DATASET", "digits"),
            "store_uri": os.environ.get("GRAPHLABEL_STORE"),
            "solver": os.environ.get("LABEL_SOLVER", "harmonic"),
            "k": int(os.environ.get("LABEL_K", "10")),
            "build_graph": True,
        },
    )


if __name__ == "__main__":
    main()
