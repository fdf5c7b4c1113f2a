"""Helpers shared by the suite's Python test scripts (run as scripts, not by pytest).

A script imports them with its parent folder on sys.path:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from testlib import check, fail
"""
import sys


def fail(msg):
    """Prints FAIL: msg and ends the test with exit status 1."""
    print("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    """fail(msg) unless cond."""
    if not cond:
        fail(msg)


def report_tables(page):
    """The tables of an `rpd report` page as {section: [row, ...]}, each row a
    dict from column heading to value: a cell's number (its data-v, which the
    report writes on every numeric cell, as int or float) or its text. The
    section of a table is the id of the heading before it (h2 or h3), else
    that heading's text; a section with several tables has their rows in
    order. So tests read numbers by meaning, not the page's markup."""
    from html.parser import HTMLParser

    class Reader(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.tables, self.section, self.heads, self.row = {}, None, [], None
            self.cell = None       # (text parts, value) of the open cell
            self.in_heading = None  # text parts of an open h2/h3
            self.head_cell = None   # text parts of an open th

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag in ("h2", "h3"):
                self.in_heading = []
                if a.get("id"):
                    self.section = a["id"]
                    self.in_heading = None
            elif tag == "table":
                self.heads = []
                self.tables.setdefault(self.section, [])
            elif tag == "th":
                self.head_cell = []
            elif tag == "tr":
                self.row = []
            elif tag == "td":
                v = a.get("data-v")
                if v is not None:
                    v = float(v) if any(c in v for c in ".eE") else int(v)
                self.cell = ([], v)

        def handle_endtag(self, tag):
            if tag in ("h2", "h3") and self.in_heading is not None:
                self.section = "".join(self.in_heading).strip()
                self.in_heading = None
            elif tag == "th" and self.head_cell is not None:
                self.heads.append("".join(self.head_cell).strip())
                self.head_cell = None
            elif tag == "td" and self.cell is not None:
                text, v = self.cell
                self.row.append(v if v is not None else "".join(text).strip())
                self.cell = None
            elif tag == "tr" and self.row:
                self.tables[self.section].append(dict(zip(self.heads, self.row)))
                self.row = None

        def handle_data(self, data):
            for parts in (self.in_heading, self.head_cell, self.cell[0] if self.cell else None):
                if parts is not None:
                    parts.append(data)

    r = Reader()
    r.feed(page)
    return r.tables
