"""How a count reads in a message, the same in the CLI's lines, the reports and the run's
log: "1 label", "1,500 nodes". No imports: the CLI loads it at start-up."""


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` with thousands separators and ``noun``, plural (``plural``, else an added "s")
    unless n is 1."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


#: Names a message lists before "and N more".
NAMED = 6


def named(names: list, show=repr) -> str:
    """The first ``NAMED`` of ``names`` quoted (each as ``show`` writes it), and how many
    more: ``'a', 'b' and 3 more``."""
    shown = ", ".join(show(name) for name in names[:NAMED])
    return shown + (f" and {len(names) - NAMED} more" if len(names) > NAMED else "")
