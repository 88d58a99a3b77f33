"""`nxc doc`: module pages for the bundled modules, their links and anchors, errors."""
from __future__ import annotations

import functools
import glob
import json
import os
import pathlib
import re
import subprocess
import sys
from html.parser import HTMLParser
from types import SimpleNamespace
from urllib.parse import unquote, urlsplit

import pytest

from browser import Browser, chromium_or_skip
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


def all_pages(site: str) -> list[str]:
    return sorted(glob.glob(os.path.join(glob.escape(site), "**", "*.html"), recursive=True))


def test_the_index_searches_symbols(site):
    html = open(os.path.join(site, "index.html"), encoding="utf-8").read()
    rows = re.findall(r'<tr class="symbol" data-i="\d+" data-name="([^"]*)" data-search="([^"]*)">\s*'
                      r'<td><a href="([^"]*)">', html)
    by_name = {}
    for name, search, link in rows:
        by_name.setdefault(name, []).append((search, link))
    # functions, structs, consts (and globals, types, externs) of every module
    assert ("nx_f32_add extern nx_f32.nx", "./nx_f32.html#fn-nx_f32_add") in by_name["nx_f32_add"]
    assert ("nxpagedseq struct nx_kvcache.nx", "./nx_kvcache.html#struct-NxPagedSeq") in by_name["nxpagedseq"]
    assert ("nx_kvc_ok const nx_kvcache.nx", "./nx_kvcache.html#const-NX_KVC_OK") in by_name["nx_kvc_ok"]
    kinds = {search.split()[1] for entries in by_name.values() for search, _ in entries}
    assert {"func", "struct", "const", "extern"} <= kinds
    assert len(rows) > 300
    # every symbol's link names an existing anchor (broken_links checks the ids)
    assert broken_links(site, os.path.join(site, "index.html"), parse_page(os.path.join(site, "index.html"))) == []


def test_every_top_level_symbol_has_an_anchor(site):
    from nxc.tools.index import build_index
    for module in BUNDLED:
        ids = parse_page(os.path.join(site, os.path.basename(module)[:-3] + ".html")).ids
        mi = build_index(module, walk_imports=False).modules[os.path.realpath(module)]
        prefix = {"func": "fn", "extern": "fn", "const": "const", "global": "global", "type": "type",
                  "struct": "struct"}
        want = {f"{prefix[d.kind]}-{d.name}" for d in mi.definitions if d.kind in prefix}
        want |= {f"field-{d.container}.{d.name}" for d in mi.definitions if d.kind == "field"}
        assert want and want <= ids, (module, sorted(want - ids)[:5])


HOSTILE = ["javascript:alert(document.domain)<!--", "a#b", "q?x=1", "100%", "with space", "quote'",
           "lt<gt>&amp;", "odd ?dir/in#ner"]


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory):
    """Modules whose file names are hostile to URLs and HTML, importing and
    calling each other, and their site."""
    src = tmp_path_factory.mktemp("hostile")
    for i, name in enumerate(HOSTILE):
        path = src / (name + ".nx")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"// {name}.nx -- a module with a hostile name\nfunc f{i}() -> i64 {{ return {i} }}\n",
                        encoding="utf-8")
    imports = "".join(f'import "{n}.nx"\n' for n in HOSTILE)
    calls = " + ".join(f"f{i}()" for i in range(len(HOSTILE)))
    (src / 'say "hi".nx').write_text(f"{imports}func main() -> i64 {{ return {calls} - 28 }}\n", encoding="utf-8")
    out = tmp_path_factory.mktemp("hostile-site")
    assert nxc_main(["doc", str(src), "-o", str(out)]) == 0
    return str(out)


def test_hostile_file_names_give_safe_links(hostile_site):
    pages = all_pages(hostile_site)
    assert len(pages) == len(HOSTILE) + 2                  # every module, and the index
    app = os.path.join(hostile_site, 'say "hi".html')
    for page in pages:
        parsed = parse_page(page)
        assert parsed.links, page
        assert broken_links(hostile_site, page, parsed) == [], page
        for link in parsed.links:            # as the browser reads the attribute, entities decoded
            assert not urlsplit(link).scheme and not re.match(r"\s*[a-z][a-z0-9+.-]*:", link, re.I), link
            assert not set(link) & set(" \"'<>"), link
        raw = open(page, encoding="utf-8").read()
        assert "<!--" not in raw and "<gt>" not in raw        # names are escaped in the text too
    index_links = parse_page(os.path.join(hostile_site, "index.html")).links
    assert "./javascript%3Aalert%28document.domain%29%3C%21--.html" in index_links
    assert "./odd%20%3Fdir/in%23ner.html" in index_links
    assert "./q%3Fx%3D1.html#fn-f2" in index_links and "./100%25.html#fn-f3" in index_links
    # a call links to the function's anchor in the other module
    app_links = parse_page(app).links
    assert "./a%23b.html#fn-f1" in app_links and "./odd%20%3Fdir/in%23ner.html#fn-f7" in app_links
    # and back up, from the subfolder
    inner = parse_page(os.path.join(hostile_site, "odd ?dir", "in#ner.html"))
    assert "../index.html" in inner.links and "../say%20%22hi%22.html" in inner.links


def test_errors_are_listed_and_linked(tmp_path, write_nx):
    write_nx("func twice(x: i64) -> i64 {\n    return x + y\n}\n", name="proj/lib.nx")
    app = write_nx("""
        import "missing.nx"
        import "lib.nx"

        func main() -> i64 {
            return zz + twice(1)
        }
        """, name="proj/app.nx")
    out = tmp_path / "site"
    assert nxc_main(["doc", os.path.dirname(app), "-o", str(out)]) == 0
    html = (out / "app.html").read_text(encoding="utf-8")
    items = re.findall(r"<li class=\"(error|warning)\">(.*?)</li>", html, re.S)
    assert len(items) == 3, items
    assert re.match(r'<a href="#L1">1:1</a>: cannot find module &#34;missing.nx&#34;', items[0][1])
    assert re.match(r"<a href=\"#L5\">5:12</a>: undefined name &#39;zz&#39;", items[1][1])
    assert re.match(r'in imported module <code>lib.nx</code>, <a href="\./lib.html#L2">2:16</a>: '
                    r"undefined name &#39;y&#39;", items[2][1])
    parsed = parse_page(str(out / "app.html"))
    assert broken_links(str(out), str(out / "app.html"), parsed) == []
    assert '<code class="missing" title="not found">missing.nx</code>' in html      # in the Imports line
    lib = (out / "lib.html").read_text(encoding="utf-8")
    assert re.search(r"<li class=\"error\"><a href=\"#L2\">2:16</a>: undefined name &#39;y&#39;</li>", lib)
    assert "in imported module" not in lib


def test_metadata_is_highlighted_in_the_header_only(tmp_path, write_nx):
    m = write_nx("""
        // m.nx -- comments that look like metadata
        // license_tier: ORIGINAL

        // note: not the header (after a blank line)
        func f() -> i64 {
            // todo: a comment in a body
            return 1 // why: trailing
        }
        """, name="m.nx")
    out = tmp_path / "site"
    assert nxc_main(["doc", m, "-o", str(out)]) == 0
    html = (out / "m.html").read_text(encoding="utf-8")
    meta = re.findall(r'<span class="cm meta">([^<]*)</span>', html)
    assert meta == ["// license_tier: ORIGINAL"]
    assert '<p class="summary">comments that look like metadata</p>' in html     # the metadata is not in it
    for c in ("// note: not the header", "// todo: a comment in a body", "// why: trailing"):
        assert re.search(r'<span class="cm">' + re.escape(c), html), c


# ---------------------------------------------------------------- in a real browser
# Debian's chromium, headless, driven over the DevTools protocol
# (tests/browser.py): a phone's width (390 px, which a headless window
# cannot be), typing into the search box, dark mode. Missing, these tests
# are skipped, saying why; under CI=true (.ci/run installs it) they fail.
PHONE = 390

_LAYOUT = """(() => {
  const box = (sel) => { const e = document.querySelector(sel);
    return e && {scroll: e.scrollWidth, client: e.clientWidth, height: e.getBoundingClientRect().height,
                 right: e.getBoundingClientRect().right, overflow: getComputedStyle(e).overflowX}; };
  return {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
          src: box(".src-box"), imports: box("#imports"),
          lineHeight: parseFloat(getComputedStyle(document.body).lineHeight)};
})()"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    exe = chromium_or_skip()
    b = Browser(exe, tmp_path_factory.mktemp("browser") / "profile")
    yield b
    b.close()


def _dom_links(b: Browser) -> SimpleNamespace:
    """The page's links and ids as the browser's DOM has them (after its scripts)."""
    return SimpleNamespace(
        links=b.js("Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href'))"),
        ids=set(b.js("Array.from(document.querySelectorAll('[id]')).map(e => e.id)")))


def test_browser_no_horizontal_scroll_on_a_phone(site, browser):
    browser.viewport(PHONE, 800)
    for page in all_pages(site):
        browser.open(pathlib.Path(page).as_uri())
        got = browser.js(_LAYOUT)
        assert got["innerWidth"] == PHONE and got["scrollWidth"] <= PHONE, (page, got)
    # long source lines scroll inside their own box; the Imports line wraps
    browser.open(pathlib.Path(site, "nx_qwen3.html").as_uri())
    got = browser.js(_LAYOUT)
    assert got["src"]["overflow"] == "auto" and got["src"]["scroll"] > got["src"]["client"], got
    assert got["imports"]["right"] <= PHONE and got["imports"]["scroll"] <= got["imports"]["client"]
    assert got["imports"]["height"] > 3 * got["lineHeight"], got            # on several lines


def test_browser_typing_a_symbol_lists_its_definition(site, browser):
    browser.viewport(PHONE, 800)
    browser.open(pathlib.Path(site, "index.html").as_uri())
    assert browser.js("document.getElementById('symbol-results').hidden") is True    # nothing typed yet
    browser.js("document.getElementById('filter').focus()")
    browser.type_text("nx_f32_add")
    shown = browser.js("""Array.from(document.querySelectorAll('tr.symbol'))
        .filter(r => r.offsetParent !== null)
        .map(r => [r.querySelector('a').getAttribute('href'), r.cells[1].textContent, r.cells[2].textContent])""")
    assert shown[0] == ["./nx_f32.html#fn-nx_f32_add", "extern", "nx_f32.nx"], shown
    assert all("nx_f32_add" in h for h, _, _ in shown)
    assert browser.js("document.getElementById('symbol-count').textContent") == f"{len(shown)} matches"
    assert browser.js("document.documentElement.scrollWidth") <= PHONE
    # its link goes to the definition's anchor, on the line of the definition
    browser.js("document.querySelector('tr.symbol:not([hidden]) a').click()")
    browser.wait_event("Page.loadEventFired")
    target = browser.js("""(() => { const t = document.querySelector(':target');
        return t && [t.id, t.textContent, t.closest('tr').id]; })()""")
    lines = open(os.path.join(bundled_dir(), "nx_f32.nx"), encoding="utf-8").read().split("\n")
    line = next(i for i, s in enumerate(lines, 1) if re.match(r"extern func nx_f32_add\(", s))
    assert target == ["fn-nx_f32_add", "nx_f32_add", f"L{line}"]


def test_browser_index_filter(site, browser):
    # ?q= fills the box and applies it (the count line is written by the script: it ran)
    browser.viewport(1280, 900, mobile=False)
    browser.open(pathlib.Path(site, "index.html").as_uri() + "?q=kv%20cache")
    hidden = browser.js("Array.from(document.querySelectorAll('tr.module')).filter(r => r.hidden)"
                        ".map(r => r.getAttribute('data-search'))")
    shown = len(BUNDLED) - len(hidden)
    expected = [m for m in BUNDLED if all(w in _search_text(site, m) for w in ("kv", "cache"))]
    assert 0 < shown == len(expected) < len(BUNDLED)
    assert browser.js("document.getElementById('count').textContent") == f"{shown} of {len(BUNDLED)} shown"
    assert all(not ("kv" in row and "cache" in row) for row in hidden)


def _search_text(site: str, module: str) -> str:
    html_text = open(os.path.join(site, "index.html"), encoding="utf-8").read()
    name = os.path.basename(module)
    m = re.search(r'<tr class="module" data-search="(' + re.escape(name) + r'[^"]*)"', html_text)
    return m.group(1)


def _luminance(css: str) -> float:
    r, g, b = (int(x) for x in re.findall(r"\d+", css)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def test_browser_dark_mode(site, browser):
    url = pathlib.Path(site, "nx_kvcache.html").as_uri()
    colours = {}
    for dark in (False, True):
        browser.viewport(PHONE, 800, dark=dark)
        browser.open(url)
        colours[dark] = browser.js("""(() => { const s = (sel, p) => getComputedStyle(document.querySelector(sel))[p];
            return [s('body', 'backgroundColor'), s('body', 'color'), s('.src-box', 'backgroundColor'),
                    s('.kw', 'color')]; })()""")
    light, dark = colours[False], colours[True]
    assert _luminance(light[0]) > 0.9 and _luminance(light[1]) < 0.2
    assert _luminance(dark[0]) < 0.15 and _luminance(dark[1]) > 0.7          # light text on dark
    assert _luminance(dark[2]) < 0.2 and dark[3] != light[3]                 # the source box and colours too
    browser.viewport(PHONE, 800, dark=False)


def test_browser_hostile_names_stay_links_to_files(hostile_site, browser):
    browser.viewport(1280, 900, mobile=False)
    for page in all_pages(hostile_site):
        browser.open(pathlib.Path(page).as_uri())
        links = browser.js("Array.from(document.links).map(a => [a.protocol, a.href])")
        assert links
        for protocol, resolved in links:
            assert protocol == "file:", (page, resolved)
            assert os.path.isfile(unquote(urlsplit(resolved).path)), (page, resolved)
        assert broken_links(hostile_site, page, _dom_links(browser)) == []


def test_browser_module_page_links_and_screenshot(site, browser, tmp_path_factory):
    art = tmp_path_factory.mktemp("shots")
    page = os.path.join(site, "nx_f32_attn_paged.html")
    browser.viewport(PHONE, 800)
    browser.open(pathlib.Path(page).as_uri())
    assert browser.js("document.title") == "nx_f32_attn_paged.nx source"
    dom = _dom_links(browser)
    assert len(dom.links) > 50
    assert broken_links(site, page, dom) == []
    # the browser's DOM has an anchor for each line of the module
    n_lines = open(os.path.join(bundled_dir(), "nx_f32_attn_paged.nx"), encoding="utf-8").read().count("\n")
    assert {f"L{i}" for i in range(1, n_lines + 1)} <= dom.ids
    shot = art / "nx_f32_attn_paged.png"
    data = browser.screenshot(shot)
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20000
    print(f"screenshot: {shot}")


def test_a_missing_browser_fails_under_ci_and_skips_elsewhere(monkeypatch):
    import browser as browser_module
    monkeypatch.setattr(browser_module.shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI: chromium is not installed"):
        browser_module.chromium_or_skip()
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y chromium"):
        browser_module.chromium_or_skip()
