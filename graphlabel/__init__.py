"""graphlabel: label stored entities from a few labels and a similarity graph."""

__version__ = "0.1.0"
