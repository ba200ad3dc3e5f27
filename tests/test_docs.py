"""The documentation site (mkdocs.yml over docs/): every page is in the navigation, every
relative link and image resolves (anchors included), the quickstart and user guide run as
written, and the README's quick start runs when pasted. mkdocs itself is not needed, except
for the last test, which builds the site in strict mode when mkdocs is installed."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys
import unicodedata

import pytest

yaml = pytest.importorskip("yaml")

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def _nav_pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [p for item in nav for p in _nav_pages(item)]
    if isinstance(nav, dict):
        return [p for v in nav.values() for p in _nav_pages(v)]
    return []


def _config() -> dict:
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text())


def test_every_page_is_in_the_navigation_and_every_entry_exists() -> None:
    nav = _nav_pages(_config()["nav"])
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(set(nav)) == pages, f"not in nav: {sorted(set(pages) - set(nav))}; " \
                                      f"missing files: {sorted(set(nav) - set(pages))}"
    assert len(nav) == len(set(nav)), "a page is in the navigation twice"


def _slug(heading: str) -> str:
    """The anchor mkdocs (Python-Markdown's toc) gives a heading."""
    text = re.sub(r"`|\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(page: pathlib.Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*$", text, re.M)}


def _links(page: pathlib.Path) -> list[str]:
    return LINK.findall(FENCE.sub("", page.read_text()))


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")) + ["../README.md"])
def test_every_relative_link_resolves(page: str) -> None:
    src = (DOCS / page).resolve()
    bad = []
    for link in _links(src):
        if re.match(r"[a-z]+:", link):  # http:, https:, mailto:
            continue
        path, _, anchor = link.partition("#")
        target = (src.parent / path).resolve() if path else src
        if not target.exists():
            bad.append(f"{link}: no file {target}")
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
            bad.append(f"{link}: no heading #{anchor} in {target.name}")
    assert not bad, "\n".join(bad)


def _python_blocks(page: pathlib.Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", page.read_text(), re.S | re.M)


@pytest.mark.parametrize("page", ["quickstart.md", "guide.md", "../README.md"])
def test_the_python_of_a_page_runs_as_written(page: str, tmp_path: pathlib.Path) -> None:
    blocks = _python_blocks(DOCS / page)
    assert blocks
    script = tmp_path / "page.py"
    script.write_text("\n".join(blocks))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    if page != "guide.md":  # both print the first read
        assert "99.6" in proc.stdout


def test_the_quickstart_prints_what_it_says() -> None:
    text = (DOCS / "quickstart.md").read_text()
    shown = re.search(r"which prints\n\n```\n(.*?)```", text, re.S)
    assert shown is not None
    code = _python_blocks(DOCS / "quickstart.md")[0].replace("lmdb://./data", "mem://")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    assert out.split() == shown.group(1).split()


@pytest.mark.slow
def test_the_site_builds_in_strict_mode(tmp_path: pathlib.Path) -> None:
    mkdocs = shutil.which("mkdocs", path=os.path.dirname(sys.executable)) or shutil.which("mkdocs")
    if mkdocs is None:
        pytest.skip("mkdocs is not installed (pip install '.[docs]')")
    proc = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "site" / "index.html").exists() and (tmp_path / "site" / "api" / "index.html").exists()
    assert "Library" in (tmp_path / "site" / "api" / "index.html").read_text()
