"""The one table formatter: plain, Markdown, fitted to a width, notes under the table."""
from pyqueue.table import render

HEAD = ["class", "p50 ns", "p99 ns"]
ROWS = [["yield0", "36.6", "338.8"], ["ck", "69.1", "482.0"]]


def test_plain_table_aligns_columns_and_puts_notes_under_it():
    text = render(HEAD, ROWS, width=200, notes=["dpdk: not installed: libdpdk-dev missing"])
    lines = text.splitlines()
    assert lines[0].split("  ") [:1] == ["class"] and "p99 ns" in lines[0] and set(lines[1]) <= {"-", " "}
    assert lines[2].split() == ROWS[0] and lines[3].split() == ROWS[1]
    assert lines[-1] == "dpdk: not installed: libdpdk-dev missing" and lines[-2] == ""
    assert "not installed: not installed" not in text


def test_too_wide_becomes_one_block_per_row():
    text = render(HEAD, ROWS, width=10)
    assert all(len(line) <= 20 for line in text.splitlines())
    assert "class yield0" in text and "p99 ns  482.0" in text


def test_markdown_is_never_reflowed():
    lines = render(HEAD, ROWS, markdown=True, width=10).splitlines()
    assert lines[0].startswith("| class") and lines[1].startswith("|--") and len(lines) == 4
