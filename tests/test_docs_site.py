"""The documentation builds without a warning, and every relative link of the README and CONTRIBUTING resolves."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
HEADING = re.compile(r"^#+ (.+)$", re.M)


def _relative_links(path: Path) -> list[str]:
    text = FENCE.sub("", path.read_text())
    return [target for target in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", target)]


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_mkdocs_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs", reason="pip install '.[docs]'")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{log}"
    assert "WARNING" not in log, log
    assert (tmp_path / "site" / "index.html").is_file()


def test_every_docs_page_is_in_the_nav():
    config = (ROOT / "mkdocs.yml").read_text()
    pages = {path.relative_to(ROOT / "docs").as_posix() for path in (ROOT / "docs").rglob("*.md")}
    listed = set(re.findall(r":\s*([\w/.-]+\.md)\s*$", config, re.M))
    assert pages == listed, (
        f"not in the nav: {sorted(pages - listed)}; in the nav but missing: {sorted(listed - pages)}"
    )


@pytest.mark.parametrize("document", ["README.md", "CONTRIBUTING.md"])
def test_every_relative_link_resolves(document):
    source = ROOT / document
    links = _relative_links(source)
    assert links, f"{document} has no relative links"
    for target in links:
        path, _, anchor = target.partition("#")
        resolved = (source.parent / path) if path else source
        assert resolved.exists(), f"{document} links to {target!r}, which does not exist"
        if anchor and resolved.suffix == ".md":
            anchors = {_anchor(heading) for heading in HEADING.findall(FENCE.sub("", resolved.read_text()))}
            assert anchor in anchors, f"{document} links to {target!r}; {resolved.name} has no heading with that anchor"
