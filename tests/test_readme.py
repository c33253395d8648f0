"""The README's contents list matches its headings: every section and subsection is listed,
in order, and every link names a heading's anchor as GitHub makes it (lower case, spaces to
hyphens, punctuation dropped), so a heading renamed without the list fails here."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but hyphens dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _headings(text: str) -> list[tuple[int, str]]:
    """(level, title) of every ## and ### heading outside code blocks, in order."""
    found, in_code = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and (match := re.match(r"^(#{2,3}) (.+)$", line)):
            found.append((len(match.group(1)), match.group(2)))
    return found


def test_the_contents_list_every_section_in_order_with_working_links():
    text = README.read_text()
    contents = text[text.index("Contents:"):text.index("## Quickstart")]
    listed = re.findall(r"^( *)- \[[^\]]+\]\(#([^)]+)\)$", contents, flags=re.MULTILINE)
    headings = _headings(text)
    anchors = [_anchor(title) for _, title in headings]
    assert len(set(anchors)) == len(anchors), "two headings share an anchor"
    assert [anchor for _, anchor in listed] == anchors
    assert [2 if not indent else 3 for indent, _ in listed] == [level for level, _ in headings]


def test_the_anchor_rule_drops_punctuation_and_code_marks():
    assert _anchor("Outputs: scores, export, review, drop-dataset") == "outputs-scores-export-review-drop-dataset"
    assert _anchor("Why `harmonic`?") == "why-harmonic"
