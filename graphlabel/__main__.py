"""``python -m graphlabel``: the same commands as the ``graphlabel`` script."""

from graphlabel.cli import main

main()
