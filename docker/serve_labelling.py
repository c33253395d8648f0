"""Serve the scheduled labelling deployments (the compose ``labeller``).

The same code path as ``graphlabel serve --config FILE`` (``graphlabel.serving``): the
jobs come from the TOML file ``$GRAPHLABEL_SCHEDULE`` when it is set, else one job named
``scheduled-labelling`` built from ``LABEL_DATASET``, ``LABEL_SOLVER``, ``LABEL_K``,
``LABEL_CRON`` (default daily at 03:00 UTC) and the optional ``LABEL_SOLVER_PARAMS``,
``LABEL_GRAPH`` and ``LABEL_FULL``, against ``GRAPHLABEL_STORE`` (Neo4j in the compose
file). Bad settings stop the container at start-up with the setting named, in one line each
(they ended in a traceback), and so does a Prefect server that does not answer (without
``PREFECT_API_URL`` it served on a temporary server of its own, where no scheduled run ever
starts, as ``graphlabel serve`` did before it checked). As ``graphlabel serve``, it warns
of a job that could not run now (its store, dataset or given labels). Runs can also
be started by hand from the Prefect UI. ``docker stop`` (SIGTERM to this process) cancels
the runs in progress and pauses the schedules; runs a killed container left unfinished are
ended by the next start.
"""

from __future__ import annotations

import sys

from graphlabel.schedule import ScheduleError, jobs_from_env, serve_warnings, server_problem
from graphlabel.serving import serve


def main() -> int:
    """Serve the jobs; bad settings, or no Prefect server answering, end it with one
    ``error:`` line per problem and exit code 1 (compose's restart policy then tries again)."""
    try:
        jobs = jobs_from_env()
    except ScheduleError as error:
        problems = error.problems
    except FileNotFoundError as error:
        problems = [f"GRAPHLABEL_SCHEDULE names no file: {error.filename}"]
    else:
        for warning in serve_warnings(jobs):  # as graphlabel serve says them
            print(f"warning: {warning}", file=sys.stderr)
        unservable = server_problem()
        if unservable is None:
            serve(jobs)
            return 0
        problems = [unservable]
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
