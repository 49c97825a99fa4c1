"""The docs site builds with mkdocs --strict, and the SVG screenshots in docs/img/ are current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mkdocs_strict_build_has_no_warnings(tmp_path):
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "WARNING" not in out, out
    for page in ("index.html", "commands/index.html", "runbooks/index.html", "img/diagnose-pod.svg"):
        assert (tmp_path / "site" / page).is_file(), page


def test_every_docs_page_is_in_the_nav():
    import yaml

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]

    def pages(items):
        for item in items:
            for v in (item.values() if isinstance(item, dict) else [item]):
                if isinstance(v, list):
                    yield from pages(v)
                else:
                    yield v

    listed = set(pages(nav))
    on_disk = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert on_disk - listed == set(), "pages missing from mkdocs.yml nav"
    assert listed - on_disk == set(), "nav entries with no page"


def test_screenshots_are_current():
    r = subprocess.run([sys.executable, str(ROOT / "docs" / "screenshots.py"), "--check"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
