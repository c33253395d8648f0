"""One spelling. Prose is British: comments, docstrings, messages and the Markdown files say
labelled, unlabelled, labelling and neighbour. Names in code keep the American forms that
scikit-learn and the stored schema use, because users type them: ``LabelProblem.labeled``,
``n_labeled`` on a ``LabelRun``, ``n_neighbors``, option values such as
``cv_graph="labeled"``. This test fails on an American spelling in prose, naming the file
and line; a word glued to code (after ``.``, a quote, a backtick, ``{``, ``_``) is a name and
passes.
"""

from __future__ import annotations

import io
import re
import subprocess
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AMERICAN = re.compile(r"(?<![\w.`\"'={\[/-])(?:[Uu]n)?[Ll]abel(?:ed|ings?)(?![\w`\"'=(}\[/-])"
                      r"|(?<![\w.`\"'={\[/-])[Nn]eighbor(?:s|hoods?|ing|ed)?(?![\w`\"'=(}\[/-])")


def _literal_text(token: str) -> str:
    """A string token's text between its quotes; an f-string's {expressions} blanked out."""
    prefix, quote, body = re.match(r"([A-Za-z]*)(\"\"\"|\'\'\'|\"|\')(.*)\2$", token, re.S).groups()
    return re.sub(r"\{[^{}]*\}", " ", body) if "f" in prefix.lower() else body


def _python_prose(source: str):
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
        elif token.type == tokenize.STRING and re.search(r"\s", token.string):
            for offset, line in enumerate(_literal_text(token.string).splitlines()):
                yield token.start[0] + offset, line


def _markdown_prose(source: str):
    fenced = False
    for number, line in enumerate(source.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and not line.startswith("    "):
            yield number, re.sub(r"`[^`]*`", " ", line)


def _tracked(*patterns: str) -> list[Path]:
    names = subprocess.run(["git", "ls-files", *patterns], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    # the results are what the benchmarks printed; this file holds examples of what it finds
    return [ROOT / name for name in names if not name.startswith("bench/results/") and name != "tests/test_spelling.py"]


def test_prose_is_british_and_names_keep_scikit_learns_spelling():
    found = []
    for path in _tracked("*.py", "*.md"):
        source = path.read_text(encoding="utf-8")
        lines = _python_prose(source) if path.suffix == ".py" else _markdown_prose(source)
        found += [f"{path.relative_to(ROOT)}:{number}: {match}"
                  for number, text in lines for match in AMERICAN.findall(text)]
    assert not found, "American spelling in prose:\n" + "\n".join(found[:40])


def test_the_check_tells_prose_from_names():
    source = ('# unlabeled nodes\n'
              'x = problem.labeled  # a name after a dot\n'
              'f"{n_labeled} given, {labeled.sum()} labelled"\n'
              'cv_graph = "labeled"\n'
              'rows = [("labeled nodes", 1)]\n')
    found = [match for _, text in _python_prose(source) for match in AMERICAN.findall(text)]
    assert found == ["unlabeled", "labeled"]
