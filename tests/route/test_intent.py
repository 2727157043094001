from __future__ import annotations

from toolroute.route.intent import intent_spans, split_intents


def test_compound_request_is_split_into_clauses() -> None:
    parts = split_intents(
        "Fetch the WeChat reading trends, draw a word cloud of them and then save it as a PDF."
    )
    assert parts == [
        "Fetch the WeChat reading trends",
        "draw a word cloud of them",
        "save it as a PDF",
    ]


def test_single_clause_request_has_no_sub_intents() -> None:
    assert split_intents("what time is it in Tokyo") == []


def test_spans_point_into_the_text() -> None:
    text = "Read notes.txt from disk; then email the summary to Bob"
    for a, b in intent_spans(text):
        assert text[a:b].strip() == text[a:b]
    assert [text[a:b] for a, b in intent_spans(text)] == split_intents(text)


def test_too_many_clauses_keep_the_longest_in_order() -> None:
    text = ". ".join(f"step number {i} " + "x" * i for i in range(12))
    parts = split_intents(text, max_intents=3)
    assert len(parts) == 3
    assert parts == sorted(parts, key=text.index)
    assert parts[-1].startswith("step number 11")


def test_a_file_path_names_a_destination_but_a_url_does_not() -> None:
    from toolroute.route.intent import names_destination

    assert names_destination("save it in /root/markdown/bitcoin.md")
    assert names_destination("write it to ~/notes.txt")
    assert not names_destination("read https://example.com/page.html")
    assert not names_destination("and/or 1/2 of the items")


def test_a_path_that_is_only_read_is_a_source_not_a_destination() -> None:
    from toolroute.route.intent import names_destination

    assert not names_destination("Read the report at ~/reports/q3.pdf and make a bar chart")
    assert names_destination("Read the data in /in/a.xlsx, then save the chart in /out/a.png")


def test_named_files_tell_a_file_read_from_a_file_written() -> None:
    from toolroute.route.intent import named_files

    text = "Read the sales in /in/sales.xlsx, plot them and then save the chart in /out/s.png"
    assert named_files(text) == [("xlsx", False), ("png", True)]
    assert named_files("what time is it in Tokyo") == []
