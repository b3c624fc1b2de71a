"""truncate_middle: head and tail kept, middle cut, honest markers (rfc-005 Decision 3)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reducers.tokens import count_tokens
from reducers.truncate import count_lines, middle_stub, truncate_middle, with_match


def _log_output(n: int) -> str:
    return "".join(f"step {i}: compiled module_{i}.py ok\n" for i in range(n))


def test_short_output_is_returned_unchanged():
    text = "ls\nfile1\nfile2\n"
    assert truncate_middle(text, 100) is text


def test_long_output_keeps_head_and_tail_and_says_what_was_cut():
    text = "$ make build\n" + _log_output(2000) + "ERROR: link failed: undefined symbol ssl_init\n"
    out = truncate_middle(text, 400, hint="trace show 812 --full")
    assert out.startswith("Total output lines: 2002\n")
    assert "$ make build" in out                                     # the command: head
    assert out.index("ERROR: link failed") > out.index("tokens truncated…")  # the error: tail
    assert "tokens truncated…" in out and "trace show 812 --full" in out
    assert count_tokens(out) <= 400


def test_cuts_land_on_line_boundaries():
    text = _log_output(3000)
    out = truncate_middle(text, 300)
    body = out.split("\n\n", 1)[1]
    head, rest = body.split("\n…", 1)
    tail = rest.split("tokens truncated…\n", 1)[1]
    assert all(line.startswith("step ") and line.endswith(" ok") for line in head.splitlines())
    assert all(line.startswith("step ") and line.endswith(" ok") for line in tail.splitlines())


def test_the_split_is_about_even():
    text = "".join(f"head line {i}\n" for i in range(3000)) + "".join(f"tail line {i}\n" for i in range(3000))
    out = truncate_middle(text, 600)
    head, tail = out.split("tokens truncated…")
    assert 0.6 < count_tokens(head) / max(count_tokens(tail), 1) < 1.6


def test_truncated_count_is_the_tokens_actually_missing():
    text = _log_output(1000)
    out = truncate_middle(text, 200)
    cut = int(out.split("\n…", 1)[1].split(" tokens truncated…")[0])
    head_tail = out.split("\n\n", 1)[1].replace(f"\n…{cut} tokens truncated…\n", "")
    assert abs((count_tokens(text) - cut) - count_tokens(head_tail)) <= 3


def test_stub_from_separate_head_and_tail_of_a_streamed_output():
    head, tail = _log_output(500), "last line: done\n"
    out = middle_stub(head, tail, total_tokens=10**6, total_lines=123456, max_tokens=300)
    assert "Total output lines: 123456" in out and out.rstrip().endswith("last line: done")


def test_count_lines_counts_an_unterminated_last_line():
    assert count_lines("") == 0 and count_lines("a") == 1 and count_lines("a\n") == 1 and count_lines("a\nb") == 2


@settings(max_examples=60, deadline=None)
@given(text=st.text(min_size=0, max_size=3000), budget=st.integers(min_value=40, max_value=800))
def test_any_output_fits_its_budget_and_keeps_an_exact_prefix_and_suffix(text, budget):
    out = truncate_middle(text, budget)
    assert count_tokens(out) <= budget or out == text
    if out != text:
        head = out.split("\n\n", 1)[1].split("\n…", 1)[0]
        assert text.startswith(head)


def test_a_stub_shows_the_part_of_its_cut_middle_that_matched():
    full = "\n".join([f"line {i} nothing here" for i in range(3000)][:1500] + ["PORT=48213 for the payroll sync"]
                     + [f"line {i} nothing here" for i in range(1500)])
    stub = truncate_middle(full, 200, hint="trace show 7 --full")
    assert "PORT=48213" not in stub
    shown = with_match(stub, "…nothing here PORT=48213 for the payroll sync line 0…")
    head, tail = stub.split("tokens truncated…")
    assert shown.startswith(head) and shown.endswith(tail.lstrip("\n"))      # head, tail and hint kept
    assert "PORT=48213 for the payroll sync" in shown and "the part that matched" in shown


def test_a_stub_that_already_shows_the_match_or_has_no_marker():
    stub = "Total output lines: 9\n\nerror E42 here\n…300 tokens truncated…\nthe end"
    assert with_match(stub, "…error E42 here…") is stub                  # already in the head
    assert with_match(stub, "") is stub
    other = "first lines\n[... 812 lines omitted ...]\nlast lines"     # another tool's own truncation
    assert with_match(other, "the E42 line").endswith("\n[the part that matched: the E42 line]")
