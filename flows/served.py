"""The flows as Prefect flow objects, for the runs a Prefect server starts.

The flows are declared with ``flows.direct.flow``, which makes the Prefect flow on first use
(a command without a server never imports Prefect). A served or deployed run is started by
``python -m prefect.engine``, which imports its deployment's entrypoint and requires a
Prefect flow there: ``graphlabel.schedule.deployments`` points the entrypoint here.
"""

from __future__ import annotations

from .labelling import labelling_flow as _labelling_flow
from .stops import keep_lost_stops

labelling_flow = _labelling_flow.prefect
keep_lost_stops()  # a served run is stopped by SIGTERM (serve's stop, the UI's Cancel)
