"""`nxc doc`: module pages for the bundled modules, their links and anchors, errors."""
from __future__ import annotations

import functools
import glob
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

import pytest

from nxc.cli import main as nxc_main
from nxc.paths import bundled_dir

BUNDLED = sorted(glob.glob(os.path.join(bundled_dir(), "*.nx")))


class PageParser(HTMLParser):
    """The ids, links, title and visible text of one page."""

    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.hidden_rows: list[str] = []        # the module rows the filter hid
        self.title = ""
        self._in_title = False
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and "href" in a:
            self.links.append(a["href"])
        if tag == "tr" and "hidden" in a and a.get("class") == "module":
            self.hidden_rows.append(a.get("data-search", ""))
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        self.text.append(data)


@functools.lru_cache(maxsize=64)
def parse_page(path: str) -> PageParser:
    """(cached: the pages of a site do not change once built)"""
    p = PageParser()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    return p


def broken_links(site: str, page: str, parsed: PageParser) -> list[str]:
    """Every link of `page` that is not a relative URL (a path starting
    with ./ or ../, or a fragment alone) naming an existing file and anchor
    once percent-decoded."""
    bad, ids = [], {}
    for href in parsed.links:
        parts = urlsplit(href)
        if parts.scheme or parts.netloc or parts.query:
            bad.append(f"{href} (not a relative link)")
            continue
        if parts.path and not parts.path.startswith(("./", "../")):
            bad.append(f"{href} (a relative path not starting with ./ or ../)")
            continue
        path = unquote(parts.path)
        target = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not target.startswith(os.path.join(site, "")):
            bad.append(f"{href} (outside the site)")
            continue
        if not os.path.isfile(target):
            bad.append(f"{href} (no file)")
        elif parts.fragment:
            if target not in ids:
                ids[target] = parsed.ids if target == page else parse_page(target).ids
            if unquote(parts.fragment) not in ids[target]:
                bad.append(f"{href} (no anchor)")
    return bad


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    assert nxc_main(["doc", bundled_dir(), "-o", str(out)]) == 0
    return str(out)


def test_a_page_per_bundled_module(site):
    pages = sorted(os.path.relpath(p, site) for p in glob.glob(os.path.join(site, "*.html")))
    assert pages == sorted(["index.html"] + [os.path.basename(m)[:-3] + ".html" for m in BUNDLED])


@pytest.mark.parametrize("module", BUNDLED, ids=os.path.basename)
def test_module_page_shape_and_links(site, module):
    name = os.path.basename(module)
    page = os.path.join(site, name[:-3] + ".html")
    parsed = parse_page(page)
    with open(module, "rb") as f:
        raw = f.read()
    n_lines = raw.decode().count("\n")
    text = " ".join(parsed.text)
    assert parsed.title == f"{name} source"
    assert f"module page · {n_lines} lines · {len(raw)} B" in text
    assert {f"L{i}" for i in range(1, n_lines + 1)} <= parsed.ids          # an anchor per line
    assert broken_links(site, page, parsed) == []


def test_names_link_to_their_definitions_across_modules(site):
    page = os.path.join(site, "nx_f32_attn_paged.html")
    with open(page, encoding="utf-8") as f:
        html = f.read()
    with open(os.path.join(bundled_dir(), "nx_kvcache.nx"), encoding="utf-8") as f:
        kv = f.read().split("\n")
    # a use links to the symbol's anchor, which is on the definition's line
    line = next(i for i, s in enumerate(kv, 1) if s.startswith("func nx_pkv_append_layer("))
    assert re.search(r'<a href="\./nx_kvcache.html#fn-nx_pkv_append_layer" title="func nx_pkv_append_layer\(', html)
    struct_line = next(i for i, s in enumerate(kv, 1) if s.startswith("struct NxPagedSeq"))
    assert 'href="./nx_kvcache.html#struct-NxPagedSeq"' in html              # a type name
    field_line = next(i for i, s in enumerate(kv, 1) if s.strip().startswith("seq_len:") and i > struct_line)
    assert 'href="./nx_kvcache.html#field-NxPagedSeq.seq_len" title="field NxPagedSeq.seq_len' in html
    assert '<a href="./nx_tier.html" title="nx_tier.nx">' in html            # an import string
    kv_page = open(os.path.join(site, "nx_kvcache.html"), encoding="utf-8").read()
    for anchor, n in (("fn-nx_pkv_append_layer", line), ("struct-NxPagedSeq", struct_line),
                      ("field-NxPagedSeq.seq_len", field_line)):
        row = re.search(rf'<tr id="L(\d+)">[^\n]*id="{re.escape(anchor)}"', kv_page)
        assert row and int(row.group(1)) == n, anchor


def test_module_page_index_and_header(site):
    parsed = parse_page(os.path.join(site, "nx_kvcache.html"))
    text = " ".join(parsed.text)
    assert "lineage_id" in text and "substrate_kvcache_v1" in text           # header metadata
    assert "func nx_pkv_append_layer(seq: *NxPagedSeq" in text               # function index
    assert "NX_KVC_OK: nx_int = 0" in text                                   # consts with values
    assert "struct NxPagedSeq" in text and "+8" in text                      # layout
    importers = parse_page(os.path.join(site, "nx_tier.html"))
    assert "./nx_kvcache.html" in importers.links


def test_index_lists_every_module(site):
    parsed = parse_page(os.path.join(site, "index.html"))
    modules = [h for h in parsed.links if "#" not in h]
    assert sorted(modules) == sorted("./" + os.path.basename(m)[:-3] + ".html" for m in BUNDLED)
    assert "filter" in parsed.ids
    assert broken_links(site, os.path.join(site, "index.html"), parsed) == []


def test_results_show_the_gate(tmp_path):
    results = tmp_path / "results.jsonl"
    module = os.path.join(bundled_dir(), "nx_tier.nx")
    run = subprocess.run([sys.executable, "-m", "nxc", "test", "--json", "--backend", "py", module],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    results.write_text(run.stdout, encoding="utf-8")
    assert json.loads(run.stdout.splitlines()[0])["status"] == "PASS"
    out = tmp_path / "site"
    assert nxc_main(["doc", module, "-o", str(out), "--results", str(results)]) == 0
    page = " ".join(parse_page(str(out / "nx_tier.html")).text)
    assert re.search(r"PASS\s+gate \(py\) in \d+\.\d{3} s", page)
    index = " ".join(parse_page(str(out / "index.html")).text)
    assert "PASS" in index


def test_imported_modules_outside_the_paths_get_pages(tmp_path, write_nx):
    app = write_nx("""
        // app.nx -- uses the bundled float32 helpers
        import "nx_f32.nx"
        func twice(x: i64) -> i64 { return nx_f32_add(x, x) }
        """, name="proj/app.nx")
    out = tmp_path / "site"
    assert nxc_main(["doc", os.path.dirname(app), "-o", str(out)]) == 0
    page = out / "app.html"
    parsed = parse_page(str(page))
    assert "./imported/nx_f32.html" in parsed.links
    assert "./imported/nx_f32.html#fn-nx_f32_add" in parsed.links
    back = parse_page(str(out / "imported" / "nx_f32.html"))
    assert "../index.html" in back.links and "../app.html" in back.links
    assert broken_links(str(out), str(page), parsed) == []
    assert "app.html" in " ".join(parse_page(str(out / "index.html")).links)


def test_a_module_with_errors_still_gets_a_page(tmp_path, write_nx):
    bad = write_nx("""
        func f() -> i64 {
            let a: i64 = 1 +
            return b
        }
        """, name="bad.nx")
    out = tmp_path / "site"
    assert nxc_main(["doc", bad, "-o", str(out)]) == 0
    html = (out / "bad.html").read_text(encoding="utf-8")
    assert "<h2>Errors</h2>" in html      # where the unfinished line ends, linked to its line
    assert re.search(r'<li class="error"><a href="#L2">2:21</a>: unexpected &#39;return&#39;', html)


def test_usage_errors(tmp_path, capsys):
    assert nxc_main(["doc", str(tmp_path / "missing"), "-o", str(tmp_path / "s")]) == 2
    assert "nxc: error: no such file or folder" in capsys.readouterr().err
    assert nxc_main(["doc", str(tmp_path), "-o", str(tmp_path / "s")]) == 2
    assert "no .nx modules found" in capsys.readouterr().err
    bad = tmp_path / "r.jsonl"
    bad.write_text("not json\n")
    (tmp_path / "m.nx").write_text("const A: i64 = 1\n")
    assert nxc_main(["doc", str(tmp_path / "m.nx"), "-o", str(tmp_path / "s"), "--results", str(bad)]) == 2
    assert "r.jsonl:1: not a result line of 'nxc test --json'" in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    assert nxc_main(["doc", str(tmp_path / "m.nx"), "-o", str(tmp_path / "file" / "site")]) == 1
    assert "cannot write the site to" in capsys.readouterr().err


# ---------------------------------------------------------------- in a real browser
# Debian's chromium, headless. The test set-up installs it when it is
# missing and can be (root, apt-get present: what CI has); otherwise the
# browser tests are skipped, saying why.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _find_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def chromium():
    exe = _find_chromium()
    if exe is None:
        if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("apt-get") is None:
            pytest.skip("chromium is not installed and cannot be installed here "
                        "(needs root and apt-get: apt-get install -y chromium)")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=900)
            if r.returncode != 0:
                pytest.skip(f"chromium is not installed and '{' '.join(cmd)}' failed: {r.stderr.strip()[-300:]}")
        exe = _find_chromium()
        if exe is None:
            pytest.skip("apt-get installed chromium but no chromium executable is on PATH")
    return exe


def run_chromium(exe: str, profile, *args: str) -> str:
    r = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def dom_of(exe: str, profile, url: str) -> PageParser:
    """The page's DOM after its scripts ran (chromium --dump-dom)."""
    p = PageParser()
    p.feed(run_chromium(exe, profile, "--dump-dom", url))
    return p


def test_browser_index_filter(site, chromium, tmp_path):
    index = os.path.join(site, "index.html")
    url = "file://" + index
    # the filter, as typed into the box: ?q= fills the box and applies it
    # (the count line is written by the script: it ran)
    filtered = dom_of(chromium, tmp_path / "profile", url + "?q=kv%20cache")
    shown = len(BUNDLED) - len(filtered.hidden_rows)
    expected = [m for m in BUNDLED if all(w in _search_text(site, m) for w in ("kv", "cache"))]
    assert 0 < shown == len(expected) < len(BUNDLED)
    assert f"{shown} of {len(BUNDLED)} shown" in "".join(filtered.text)
    assert all(not ("kv" in row and "cache" in row) for row in filtered.hidden_rows)


def _search_text(site: str, module: str) -> str:
    html_text = open(os.path.join(site, "index.html"), encoding="utf-8").read()
    name = os.path.basename(module)
    m = re.search(r'data-search="(' + re.escape(name) + r'[^"]*)"', html_text)
    return m.group(1)


def test_browser_module_page_links_and_screenshot(site, chromium, tmp_path_factory):
    art = tmp_path_factory.mktemp("browser")
    page = os.path.join(site, "nx_f32_attn_paged.html")
    dom = dom_of(chromium, art / "profile", "file://" + page)
    assert dom.title == "nx_f32_attn_paged.nx source"
    assert len(dom.links) > 50
    assert broken_links(site, page, dom) == []
    # the browser's DOM has an anchor for each line of the module
    n_lines = open(os.path.join(bundled_dir(), "nx_f32_attn_paged.nx"), encoding="utf-8").read().count("\n")
    assert {f"L{i}" for i in range(1, n_lines + 1)} <= dom.ids
    shot = art / "nx_f32_attn_paged.png"
    run_chromium(chromium, art / "profile", "--window-size=1280,1600", f"--screenshot={shot}",
                 "file://" + page)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20000
    print(f"screenshot: {shot}")
