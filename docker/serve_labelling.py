"""Serve the scheduled labelling deployments (the compose ``labeller``).

The same code path as ``graphlabel serve --config FILE`` (``graphlabel.serving``): the
jobs come from the TOML file ``$GRAPHLABEL_SCHEDULE`` when it is set, else one job named
``scheduled-labelling`` built from ``LABEL_DATASET``, ``LABEL_SOLVER``, ``LABEL_K``,
``LABEL_CRON`` (default daily at 03:00 UTC) and the optional ``LABEL_SOLVER_PARAMS``,
``LABEL_GRAPH`` and ``LABEL_FULL``, against ``GRAPHLABEL_STORE`` (Neo4j in the compose
file). Bad settings stop the container at start-up with the setting named. Runs can also
be started by hand from the Prefect UI. ``docker stop`` (SIGTERM to this process) cancels
the runs in progress and pauses the schedules; runs a killed container left unfinished are
ended by the next start.
"""

from __future__ import annotations

from graphlabel.schedule import jobs_from_env
from graphlabel.serving import serve


def main() -> None:
    serve(jobs_from_env())


if __name__ == "__main__":
    main()
