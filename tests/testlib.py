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


def check_output_safety(write, work, valid):
    """Checks that a command writing a whole output file never clobbers what
    is not a regular file of its own (common/include/nano/outfile.h).

    write(out, code) runs the command with output path out, asserts its exit
    status is code and returns (stdout, stderr); valid(text) says whether
    text is a complete output. Cases: a character device and a FIFO (written
    in place, still there after), a symbolic link to a device (in place, the
    link kept), a link to a regular file and a dangling link (refused, exit
    1, link and target unchanged), a folder (refused), a planted OUT.tmp link
    (left alone), a regular file (replaced, its mode kept), "-" (standard
    output)."""
    import os
    import stat
    import threading

    def path(name):
        p = os.path.join(work, name)
        if os.path.lexists(p):
            if os.path.isdir(p) and not os.path.islink(p):
                os.rmdir(p)
            else:
                os.unlink(p)
        return p

    def strays(name):
        return [f for f in os.listdir(work) if f.startswith(name + ".tmp.")]

    # a character device: made here as /dev/null's twin where mknod is allowed
    # (root), else /dev/null itself is only named through a link below
    dev = path("dev")
    try:
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        dev = None
    if dev:
        write(dev, 0)
        check(stat.S_ISCHR(os.lstat(dev).st_mode), "a device at OUT stays a device")
        check(not strays("dev"), "no temporary left beside a device: %s" % strays("dev"))
    link = path("devlink")
    os.symlink("/dev/null", link)
    write(link, 0)
    check(os.path.islink(link) and os.readlink(link) == "/dev/null",
          "a link to a device is written through, not replaced")

    # a FIFO: written in place while a reader takes what comes
    fifo = path("fifo")
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()))
    reader.start()
    write(fifo, 0)
    reader.join(60)
    check(not reader.is_alive() and got and valid(got[0]), "the FIFO's reader got the output")
    check(stat.S_ISFIFO(os.lstat(fifo).st_mode), "a FIFO at OUT stays a FIFO")

    # links to a regular file or to nothing: refused, both unchanged
    victim = path("victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    for name, target in (("filelink", victim), ("dangling", os.path.join(work, "nothing"))):
        out = path(name)
        os.symlink(target, out)
        _, err = write(out, 1)
        check("%s is a symbolic link; refusing" % out in err, "refusal names the link: " + err)
        check(os.readlink(out) == target, "the link at OUT is kept")
        check(not os.path.exists(os.path.join(work, "nothing")), "nothing made through the link")
    check(open(victim).read() == "precious\n", "a link's target is never written")

    folder = path("folder")
    os.mkdir(folder)
    _, err = write(folder, 1)
    check("%s is a folder; refusing" % folder in err, "refusal names the folder: " + err)

    # a planted OUT.tmp link is left alone; a regular OUT is replaced, mode kept
    out = path("out")
    planted = path("out.tmp")
    os.symlink(victim, planted)
    with open(out, "w") as f:
        f.write("old\n")
    os.chmod(out, 0o640)
    write(out, 0)
    check(open(victim).read() == "precious\n", "a planted OUT.tmp's target is never written")
    check(os.readlink(planted) == victim, "a planted OUT.tmp is left alone")
    check(stat.S_ISREG(os.lstat(out).st_mode) and valid(open(out).read()), "OUT replaced")
    check(stat.S_IMODE(os.stat(out).st_mode) == 0o640, "a replaced OUT keeps its mode")
    check(not strays("out"), "no temporary left: %s" % strays("out"))

    stdout, _ = write("-", 0)
    check(valid(stdout), "'-' writes standard output")
