"""replay-inspect report: one self-contained HTML page, opened in a real headless browser
(Debian's Chromium); the rendered DOM shows every compile with its why-answer, guards, graphs,
symbol provenance and timeline, and text from the store stays text. About 15 s on a 2-core machine."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from dynamo_replay._core import Manifest, Store, TraceEvent

DATA = Path(__file__).parent.parent / "data"
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    def __init__(self, tag: str, attrs: dict[str, str | None]):
        self.tag, self.attrs, self.children = tag, attrs, []

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Node]:
        found = []
        for c in self.children:
            if isinstance(c, str):
                continue
            if (
                (tag is None or c.tag == tag)
                and (cls is None or cls in (c.attrs.get("class") or "").split())
                and all(c.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())
            ):
                found.append(c)
            found.extend(c.find_all(tag, cls, **attrs))
        return found

    def rows(self) -> list[list[str]]:
        """A table's data rows as cell texts."""
        return [[td.text() for td in tr.find_all("td")] for tr in self.find_all("tr") if tr.find_all("td")]


class TreeBuilder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs))
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    raise AssertionError("no Chromium to open the report in: make test installs Debian's chromium")


def rendered(page: Path) -> Node:
    """The DOM Chromium builds from the page, headless, as a tree."""
    done = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--user-data-dir=" + str(page.parent / "chromium-profile"),
            "--dump-dom",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "<body" in done.stdout, done.stderr[-2000:]
    builder = TreeBuilder()
    builder.feed(done.stdout)
    return builder.root


def report(inspect, store: Path, page: Path) -> Node:
    done = inspect("report", str(store), "-o", str(page))
    assert done.returncode == 0, done.stderr
    source = page.read_text(errors="replace")
    # Self-contained: no tag that fetches or runs anything, no link off the page, no style
    # that imports (store text is escaped, so every "<" left is the report's own markup).
    tags = re.findall(r"<[a-zA-Z][^>]*>", source)
    assert not [t for t in tags if re.match(r"<(script|link|img|iframe|object|embed|base)\b", t, re.I)]
    assert not [t for t in tags if re.search(r"\s(src|srcset|action)=", t, re.I)]
    assert all(re.fullmatch(r'href="#[\w-]*"', h) for t in tags for h in re.findall(r'href="[^"]*"', t))
    [style] = re.findall(r"<style>(.*?)</style>", source, re.S)
    assert "url(" not in style and "@import" not in style
    return rendered(page)


def section(dom: Node, compile_id: str) -> Node:
    [found] = dom.find_all("section", cls="compile", data_compile=compile_id)
    return found


def show(inspect, store: Path, compile_id: str, *flags: str) -> dict:
    done = inspect("show", "--json", *flags, str(store), compile_id)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def gpt2(gpt2_recompile_break) -> Path:
    """GPT-2 with a recompile and a graph break (conftest, shared with the export tests)."""
    return gpt2_recompile_break[0]


def test_report_shows_each_compile_with_guards_graphs_symbols_and_timeline(gpt2, inspect, tmp_path):
    dom = report(inspect, gpt2, tmp_path / "report.html")
    listed = json.loads(inspect("ls", "--json", str(gpt2)).stdout)["compiles"]
    assert {s.attrs["data-compile"] for s in dom.find_all("section", cls="compile")} == {
        c["compile_id"] for c in listed
    }
    [table] = dom.find_all("table", id="compile-table")
    assert [(r[0], r[3], r[4]) for r in table.rows()] == [(c["compile_id"], c["status"], c["reason"]) for c in listed]
    for c in listed:
        part = section(dom, c["compile_id"])
        assert f"{c['compile_id']} {c['function']}" == part.find_all("h3")[0].text()
        guards = show(inspect, gpt2, c["compile_id"], "--guards")
        if guards["guard_list"]:
            [guard_table] = part.find_all("table", cls="guard-list")
            assert [row[2] for row in guard_table.rows()] == [g["code"] for g in guards["guard_list"]]
        graphs = show(inspect, gpt2, c["compile_id"], "--graph")["graphs"]
        assert sorted(graphs) == sorted(c["graphs"])
        for name, text in graphs.items():
            [shown] = part.find_all("details", cls="graph", data_graph=name)
            assert shown.find_all("pre")[0].text() == text
        symbols = show(inspect, gpt2, c["compile_id"], "--shapes").get("symbols", [])
        if symbols:
            [symbol_table] = part.find_all("table", cls="symbol-table")
            assert [(r[0], r[2]) for r in symbol_table.rows()] == [
                (s["symbol"], "[{}, {}]".format(*s["range"])) for s in symbols
            ]
    # The recompiled model's frame went dynamic: its sizes are symbols with a source.
    assert any(
        r[3].startswith("L['args'][0].size()")
        for r in section(dom, "0/1").find_all("table", cls="symbol-table")[0].rows()
    )
    # One timeline row per compile of a frame, each bar titled with its name and length.
    [chart] = dom.find_all("svg", id="timeline-chart")
    bars = chart.find_all("rect", cls="compile-bar")
    assert len(bars) == len({c["compile_id"].split("_")[0] for c in listed})
    assert all(re.fullmatch(r"compile \d+/\d+ \S+: \d+\.\d{3} s", b.text()) for b in bars)
    assert {"bytecode_tracing", "backend_compile"} <= {
        b.text().split(":")[0] for b in chart.find_all("rect", cls="phase-bar")
    }


def test_report_carries_the_why_answer(gpt2, inspect, tmp_path):
    done = inspect("why", "--json", str(gpt2))
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    dom = report(inspect, gpt2, tmp_path / "report.html")
    assert answer["compiles"] or answer["functions"], "the job recompiles: why has something to say"
    # Each compile's part reads as `why` prints it: headline, failed guard, the fix in words; no JSON keys.
    for entry in answer["compiles"]:
        [why] = section(dom, entry["compile_id"]).find_all("div", cls="why")
        text = why.text()
        assert f"{entry['compile_id']} {entry['headline']}" in text
        for advice in (entry.get("recompile") or {}).get("advice", []):
            assert f"{advice['kind']}: {advice['edit']}" in text
        assert not any(key in text for key in ('"headline"', "failure_kind", "user_frame", "{")), text
    assert dom.find_all("h2", id="why")
    page_text = dom.text()
    assert all(f["summary"] in page_text for f in answer["functions"])


def test_report_shows_where_a_failed_compiles_symbols_came_from(inspect, tmp_path):
    """The kept 1.2 store's branches_on_data: nonzero makes u0, torch._check bounds it, and
    `if count == 0` fails the compile."""
    dom = report(inspect, DATA / "capture-1.2" / "every-record.dynrep", tmp_path / "report.html")
    part = section(dom, "1/0")
    failure = part.find_all("dl", cls="failure")[0].text()
    assert "Eq(u0, 0)" in failure and "every_record_job.py:42" in failure and "if count == 0" in failure
    [u0] = part.find_all("table", cls="symbol-table")[0].rows()
    assert u0[:3] == ["u0", "unbacked", "[0, 4]"]
    assert u0[6] == "aten.nonzero.default (dynamo)" and "every_record_job.py:40" in u0[7]
    [assertion] = part.find_all("table", cls="shape-guards")[0].rows()
    assert assertion[:3] == ["u0 <= 4", "runtime_assert", "u0"] and "every_record_job.py:41" in assertion[3]


def test_report_header_is_the_stores_manifest(inspect, tmp_path):
    store = DATA / "capture-1.2" / "every-record.dynrep"
    [manifest] = [r for r in Store.open(str(store)).records() if isinstance(r, Manifest)]
    dom = report(inspect, store, tmp_path / "report.html")
    [header] = dom.find_all("dl", id="job")
    facts = dict(zip([dt.text() for dt in header.find_all("dt")], [dd.text() for dd in header.find_all("dd")]))
    assert facts["captured by"] == manifest.tool and facts["created"] == manifest.created_at
    assert facts["torch"] == manifest.environment["torch.version"]
    assert facts["command line"] == " ".join(manifest.command_line)
    listed = json.loads(inspect("ls", "--json", str(store)).stdout)["compiles"]
    assert facts["compiles"].startswith(
        f"{len({c['compile_id'].split('/')[0] for c in listed})} frames, {len(listed)} compiles"
    )


def test_text_from_the_store_stays_text(inspect, tmp_path):
    hostile = "<script>document.title='pwned'</script><img src=x onerror=alert(1)></pre>\"'&amp;"
    store = Store.create(str(tmp_path / "hostile.dynrep"), level=3, overwrite=True)
    graph = store.put_blob(("def forward(self):\n    return '" + hostile + "'\n").encode() + b"\xff\xfe bytes\n")
    events = (
        ("dynamo_start", {"stack": []}, ""),
        ("dynamo_output_graph", {}, graph),
        (
            "compilation_metrics",
            {
                "co_name": hostile,
                "co_filename": hostile,
                "co_firstlineno": 3,
                "entire_frame_compile_time_s": 0.5,
                "start_time": 1.7e9,
                "fail_type": hostile,
                "fail_reason": hostile,
            },
            "",
        ),
        (
            "dynamo_replay.symbol_origin",
            {
                "symbol": hostile,
                "unbacked": True,
                "phase": "dynamo",
                "op": hostile,
                "user_frame": {"file": hostile, "line": 1, "function": hostile, "code": hostile},
            },
            "",
        ),
    )
    for name, metadata, key in events:
        store.put(
            TraceEvent(
                name=name,
                compile_id=(0, 0, 0),
                metadata_json=json.dumps(metadata),
                payload_key=key,
                payload_size=1,
                time=1.7e9,
            )
        )
    store.close()
    dom = report(inspect, tmp_path / "hostile.dynrep", tmp_path / "report.html")
    assert not dom.find_all("script") and not dom.find_all("img")
    [title] = dom.find_all("head")[0].find_all("title")
    assert "pwned" not in title.text()
    assert "captured by(no manifest)" in dom.find_all("dl", id="job")[0].text()
    part = section(dom, "0/0")
    assert part.find_all("h3")[0].text() == f"0/0 {hostile}"
    [graph_text] = part.find_all("details", cls="graph", data_graph="dynamo_output_graph")[0].find_all("pre")
    assert hostile in graph_text.text() and "\ufffd\ufffd bytes" in graph_text.text()
    [origin] = part.find_all("table", cls="origins")[0].rows()
    assert origin[0] == hostile and origin[2] == hostile


def test_bad_input_is_an_error_not_a_crash(inspect, tmp_path):
    done = inspect("report", str(DATA / "malformed" / "empty.dynrep"), "-o", str(tmp_path / "r.html"))
    assert done.returncode == 1 and done.stderr.startswith("error: ") and "empty file" in done.stderr
    done = inspect("report", str(DATA / "capture-1.2" / "every-record.dynrep"))
    assert done.returncode == 2 and "--output" in done.stderr
    done = inspect("report", str(DATA / "capture-1.2" / "every-record.dynrep"), "-o", str(tmp_path / "no" / "r.html"))
    assert done.returncode == 1 and "cannot write" in done.stderr
