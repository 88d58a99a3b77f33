"""`nxc port`: Nishi module pages -> .nx modules (the rule of the seeds' pages).

A page (see docs/porting.md) is a line `NAME source`, a line
`↩ module page · N lines · B B`, then the N source lines, each prefixed by its
1-based number, with every run of whitespace collapsed to one space and no
newline after the last line. Restoring a line removes its number and indents
it by 4 spaces per `(`, `[` or `{` still open at its start (brackets in
comments and strings do not count; a line that begins with closing brackets
is dedented by them). The indentation cannot be recovered otherwise, so the
restored file is smaller than the page's byte count says.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

_HEADER = re.compile(r"(?P<name>[A-Za-z0-9_.-]+\.nx) source\Z")
_META = re.compile(r"↩ module page · (?P<lines>\d+) lines · (?P<bytes>\d+) B\Z")
# The end of a page's last line when the next page was pasted right after it.
_HEADER_AT_END = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_.-]*\.nx) source\Z")
INDENT = "    "
_OPENERS, _CLOSERS = "([{", ")]}"


class PageError(Exception):
    """A page that cannot be restored: which page, which line of the input."""

    def __init__(self, origin: str, line: int, message: str):
        where = f"{origin}:{line}" if line else origin
        super().__init__(f"{where}: error: {message}")
        self.origin, self.line, self.message = origin, line, message


@dataclass
class Page:
    name: str                     # the module's file name, e.g. nx_f32_attn_paged.nx
    lines: int                    # the count the page states
    bytes: int                    # the original file's bytes, as the page states
    origin: str                   # where the page was read from (file or "<stdin>")
    first_line: int               # the input line of its `NAME source` header
    body: list[str] = field(default_factory=list)    # source lines, numbers removed, collapsed
    warnings: list[str] = field(default_factory=list)   # what was changed to read it (line ends, NBSP)


def is_page_header(line: str) -> bool:
    """Whether `line` is a page's first line (`NAME.nx source`)."""
    return _HEADER.match(line.strip().lstrip("\ufeff")) is not None


def split_pages(text: str, origin: str) -> tuple[list[Page], list[PageError]]:
    """The pages in `text` (one or several pasted back to back), and what
    breaks the format: a missing header, numbering that is not 1, 2, 3, ...
    (a gap is named as such), fewer lines than stated. A broken page is
    left out and reading goes on at the next page header, so each error is
    one page's and every other page is still returned."""
    raw = text.split("\n")
    if raw and raw[-1] == "":
        raw.pop()                 # a trailing newline added by an editor or a shell
    # A page saved on Windows ends its lines in CRLF, and a browser's copy
    # turns some spaces into non-breaking ones: both are read as what they
    # stand for (LF, a space), and each page that had them says so.
    crlf = {k for k, line in enumerate(raw) if line.endswith("\r")}
    nbsp = {k: len(_NBSP.findall(line)) for k, line in enumerate(raw) if _NBSP.search(line)}
    for k in crlf:
        raw[k] = raw[k][:-1]
    for k in nbsp:
        raw[k] = _NBSP.sub(" ", raw[k])
    pages: list[Page] = []
    errors: list[PageError] = []
    i = 0
    while i < len(raw):
        if not raw[i].strip():
            i += 1                # blank lines between pasted pages
            continue
        try:
            if pages and raw[i].startswith(str(pages[-1].lines + 1)):
                raise PageError(origin, i + 1, f"{pages[-1].name}: the page states {_lines(pages[-1].lines)} "
                                               f"but line {pages[-1].lines + 1} follows")
            start = i
            page, i = _read_page(raw, i, origin)
            pages.append(page)
            _note_changes(page, range(start, start + 2 + page.lines), crlf, nbsp, len(raw))
        except PageError as exc:
            errors.append(exc)
            # from the error's own line: it may be the next page's header (a short page)
            i = _next_page_start(raw, max(exc.line - 1, i + 1))
    if not pages and not errors:
        errors.append(PageError(origin, 1, "no module page here (a page starts with a line 'NAME.nx source')"))
    return pages, errors


NBSP = "\u00a0\u202f\u2007"         # no-break space, narrow no-break space, figure space
_NBSP = re.compile(f"[{NBSP}]")


def _note_changes(page: Page, lines: range, crlf: set[int], nbsp: dict[int, int], total: int) -> None:
    """The warnings of a page whose input lines `lines` had CRLF ends or NBSPs."""
    ends = [k for k in lines if k in crlf]
    ended = [k for k in lines if k < total - 1 or k in crlf]      # the input's last line has no line end
    if ends:
        how = "Windows line ends (CRLF)" if len(ends) == len(ended) else \
            f"mixed line ends ({len(ends)} CRLF, {len(ended) - len(ends)} LF)"
        page.warnings.append(f"{page.origin}:{page.first_line}: warning: {page.name}: the page has {how}; "
                             "restored with LF line ends")
    spaced = [k for k in lines if k in nbsp]
    if spaced:
        numbered = [k - page.first_line for k in spaced if k - page.first_line >= 1]     # page line numbers
        count = sum(nbsp[k] for k in spaced)
        page.warnings.append(f"{page.origin}:{spaced[0] + 1}: warning: {page.name}: {count} non-breaking "
                             f"space{'s' if count != 1 else ''} (U+00A0, as a browser's copy leaves) read as "
                             f"spaces, on page line{'s' if len(numbered) != 1 else ''} "
                             + ", ".join(map(str, numbered)))


def comment_after_code_lines(page: Page) -> list[int]:
    """Page line numbers where code is followed by a `//` comment: where the
    original most likely aligned the comments, with spaces the page collapsed."""
    out = []
    in_comment = False
    for n, line in enumerate(page.body, 1):
        at = -1 if in_comment else _comment_start(line)
        if at > 0 and line[:at].strip():
            out.append(n)
        _, in_comment = _scan(line, in_comment)
    return out


def _comment_start(line: str) -> int:
    """The column of a `//` outside strings and block comments, or -1."""
    i, n = 0, len(line)
    while i < n:
        if line.startswith("//", i):
            return i
        if line.startswith("/*", i):
            end = line.find("*/", i + 2)
            if end < 0:
                return -1
            i = end + 2
            continue
        if line[i] == '"':
            end = line.find('"', i + 1)
            i = n if end < 0 else end + 1
            continue
        i += 1
    return -1


def _next_page_start(raw: list[str], i: int) -> int:
    """The index of the next page header at or after `i` (a header glued to
    the end of a line is cut off into that line), or the end."""
    while i + 1 < len(raw):
        if _META.match(raw[i + 1].strip()):
            if _HEADER.match(raw[i].strip()):
                return i
            starts = [k for k in range(len(raw[i])) if _HEADER_AT_END.match(raw[i], k)]
            if starts:
                k = min(starts, key=lambda k: (not raw[i][k:].startswith("nx_"), k))
                raw[i] = raw[i][k:]
                return i
        i += 1
    return len(raw)


def _lines(n: int) -> str:
    return f"{n} line{'s' if n != 1 else ''}"


def _read_page(raw: list[str], i: int, origin: str) -> tuple[Page, int]:
    m = _HEADER.match(raw[i].strip())
    if m is None:
        raise PageError(origin, i + 1, f"expected a page header 'NAME.nx source', found {raw[i][:60]!r}")
    if i + 1 >= len(raw) or _META.match(raw[i + 1].strip()) is None:
        raise PageError(origin, i + 2, "expected '↩ module page · N lines · B B' after the page header")
    meta = _META.match(raw[i + 1].strip())
    page = Page(m["name"], int(meta["lines"]), int(meta["bytes"]), origin, i + 1)
    j = i + 2
    for number in range(1, page.lines + 1):
        if j >= len(raw):
            raise PageError(origin, j, f"{page.name}: the page states {_lines(page.lines)} but ends after "
                                       f"line {number - 1}")
        line = raw[j]
        prefix = str(number)
        if _HEADER.match(line.strip()) and j + 1 < len(raw) and _META.match(raw[j + 1].strip()):
            raise PageError(origin, j + 1, f"{page.name}: the page states {_lines(page.lines)} but the next page "
                                           f"starts after line {number - 1}")
        following = raw[j + 1] if number < page.lines and j + 1 < len(raw) else None
        gap = _gap(line, number, page.lines, following)
        if gap is not None:
            missing = f"line {number} is" if gap == number + 1 else f"lines {number} to {gap - 1} are"
            raise PageError(origin, j + 1, f"{page.name}: {missing} missing from the page: line {gap} "
                                           f"follows line {number - 1}")
        if not line.startswith(prefix):
            got = re.match(r"\d*", line).group()
            raise PageError(origin, j + 1, f"{page.name}: line {number} of the page is numbered "
                                           f"{got or 'nothing'!r}" + (f" ({line[:40]!r})" if not got else ""))
        body = line[len(prefix):]
        if number == page.lines and j + 1 < len(raw) and _META.match(raw[j + 1].strip()):
            # The next page was pasted right after this one's last line.
            body, nxt = _split_last_line(body, page, origin, j)
            raw[j] = nxt
            page.body.append(_uncollapse(body))
            return page, j
        page.body.append(_uncollapse(body))
        j += 1
    return page, j


def _gap(line: str, number: int, total: int, following: str | None) -> int | None:
    """The number `line` really has when lines from `number` on are missing
    (None: it is line `number`, or numbered wrongly in some other way).

    The numbers run into the text (`20x` is line 2 holding `0x` or line 20
    holding `x`), so the next line decides: line `number` holding text that
    starts with a digit is taken as such when the next line is numbered
    `number + 1`; a longer reading M counts when the next line is numbered
    M + 1 (or M is the page's last line and nothing follows)."""
    digits = re.match(r"\d*", line).group()
    readings = [int(digits[:k]) for k in range(1, len(digits) + 1)
                if digits[0] != "0" and number < int(digits[:k]) <= total]
    if not readings:
        return None
    sequential = line.startswith(str(number))
    if sequential and (following is None or following.startswith(str(number + 1))):
        return None

    def continues(m: int) -> bool:
        return following.startswith(str(m + 1)) if following is not None else m == total
    fits = [m for m in readings if continues(m)]
    if fits:
        return fits[0]
    return None if sequential else readings[0]


def _split_last_line(body: str, page: Page, origin: str, j: int) -> tuple[str, str]:
    """`}nx_b.nx source` -> (`}`, `nx_b.nx source`). Where a name could start
    at several places, the split that leaves the page's brackets balanced and
    a Nishi-style name (`nx_...`) wins, then the longest name."""
    candidates = []
    for k in range(len(body)):
        m = _HEADER_AT_END.match(body, k)
        if m is not None and m.start() == k:
            rest = body[:k]
            balanced = bracket_depth(page.body + [rest]) == 0
            candidates.append((not balanced, not m["name"].startswith("nx_"), k, rest, body[k:]))
    if not candidates:
        raise PageError(origin, j + 1, f"{page.name}: the next page's header is not at the end of line "
                                       f"{page.lines}")
    _, _, _, rest, header = min(candidates)
    return rest, header


def _uncollapse(body: str) -> str:
    # An indented line shows one space after its number: the indentation is
    # recomputed, so leading and trailing blanks go.
    return body.strip(" \t")


def _scan(line: str, in_block_comment: bool) -> tuple[list[str], bool]:
    """The brackets on one line outside comments and strings, and whether a
    block comment is still open at its end."""
    out, i, n = [], 0, len(line)
    while i < n:
        if in_block_comment:
            end = line.find("*/", i)
            if end < 0:
                return out, True
            in_block_comment, i = False, end + 2
            continue
        ch = line[i]
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            in_block_comment, i = True, i + 2
            continue
        if ch == '"':
            end = line.find('"', i + 1)
            i = n if end < 0 else end + 1
            continue
        if ch in _OPENERS or ch in _CLOSERS:
            out.append(ch)
        i += 1
    return out, in_block_comment


def indent_lines(lines: list[str]) -> list[str]:
    """Each (unindented) line indented by the page rule."""
    depth, in_comment, out = 0, False, []
    for line in lines:
        brackets, still_in_comment = _scan(line, in_comment)
        lead = 0
        if not in_comment:         # closers that begin the line dedent it
            for ch in line:
                if ch in _CLOSERS:
                    lead += 1
                elif ch != " ":
                    break
        level = max(depth - lead, 0)
        out.append(INDENT * level + line if line else "")
        for ch in brackets:
            depth = depth + 1 if ch in _OPENERS else max(depth - 1, 0)
        in_comment = still_in_comment
    return out


def bracket_depth(lines: list[str]) -> int:
    depth, in_comment = 0, False
    for line in lines:
        brackets, in_comment = _scan(line, in_comment)
        for ch in brackets:
            depth = depth + 1 if ch in _OPENERS else depth - 1
    return depth


def restore(page: Page) -> str:
    """The module's text: the page's lines, indented, each ending in a newline."""
    return "".join(line + "\n" for line in indent_lines(page.body))


@dataclass
class Restored:
    page: Page
    path: str
    text: str
    status: str                   # "written" | "unchanged" | "exists" (different, not overwritten)

    @property
    def size(self) -> int:
        return len(self.text.encode("utf-8"))


def read_pages(path: str, stdin=None) -> tuple[list[Page], list[PageError]]:
    """The pages of one input (`-` is stdin) and its errors (see split_pages)."""
    origin = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            data = stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except OSError as exc:
        return [], [PageError(origin, 0, f"cannot read: {exc.strerror or exc}")]
    if isinstance(data, str):
        text = data
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            return [], [PageError(origin, line, f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset "
                                                f"{exc.start}); nothing restored from it")]
    if text.startswith("\ufeff"):
        text = text[1:]
    return split_pages(text, origin)


def write_module(page: Page, out_dir: str, force: bool) -> Restored:
    text = restore(page)
    path = os.path.join(out_dir, page.name)
    if os.path.exists(path):
        with open(path, "rb") as f:
            old = f.read()
        if old == text.encode("utf-8"):
            return Restored(page, path, text, "unchanged")
        if not force:
            return Restored(page, path, text, "exists")
    os.makedirs(out_dir, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    return Restored(page, path, text, "written")


_BLANKS = re.compile(r"[ \t\f\r\v]+")


def page_of(name: str, text: str) -> str:
    """The module page of a module's text (what `restore` inverts): for
    writing test pages and for checking a restoration against its source."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    body = [f"{i}{_BLANKS.sub(' ', line).rstrip()}" for i, line in enumerate(lines, 1)]
    head = f"{name} source\n↩ module page · {len(lines)} lines · {len(text.encode('utf-8'))} B\n"
    return head + "\n".join(body)
