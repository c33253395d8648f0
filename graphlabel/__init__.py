"""graphlabel, the application: the CLI, schedules and serving (nothing in the project imports it)."""

from labelling.provenance import PROJECT_VERSION as __version__

__all__ = ["__version__"]
