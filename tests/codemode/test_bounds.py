"""What a script hands the gateway is bounded in the worker: its value and its calls' arguments
are written as JSON there, counted as written, so a structure shared many times over, a huge
string repeated or an integer too long to write ends the script with an error naming its
limit, and nothing larger than the limit ever crosses. Also the writer itself (the same source
the worker runs) and the gateway's own bounded walk of a call's arguments, as properties over
generated values; fair sandbox slots; the page store's quota per client."""

from __future__ import annotations

import json
import math
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolroute.codemode import CodeModeLimits
from toolroute.codemode._writer import bounded_writer
from toolroute.codemode.pages import Owner, Pages
from toolroute.codemode.sandbox import MESSAGE_CHARS, Sandbox, ScriptEnd, guarded
from toolroute.codemode.slots import FairSlots
from toolroute.gateway.calls import arguments as checks

NAMED = {"result_bytes", "result_depth", "int_digits", "memory_mb", "cpu_s", "recursion"}
"""The limits a value can meet on its way out of the worker."""


def _run(
    code: str, limits: CodeModeLimits | None = None, calls: list[Any] | None = None
) -> ScriptEnd:
    async def call(name: str, arguments: dict[str, Any]) -> Any:
        if calls is not None:
            calls.append((name, arguments))
        return {"ok": True}

    async def main() -> ScriptEnd:
        with anyio.fail_after(60):
            return await Sandbox(limits or CodeModeLimits()).run(code, call)

    return anyio.run(main)


DOUBLED = "x = []\nfor i in range(22):\n    x = [x, x]\n"
"""22 objects in the worker whose JSON, written out, is 4 million lists."""


def test_a_value_shared_many_times_over_ends_the_script_at_result_bytes() -> None:
    end = _run(DOUBLED + "x")
    assert (end.kind, end.limit, end.value) == ("limit", "result_bytes", None)
    assert "result_bytes = 1048576" in (end.error or "")


def test_a_huge_string_repeated_ends_the_script_at_result_bytes() -> None:
    end = _run("s = 'a' * 10**6\n[s] * 300")
    assert (end.limit, end.value) == ("result_bytes", None)


@pytest.mark.parametrize("code", ["10**5000", "import math\nmath.factorial(10**5)"])
def test_an_integer_too_long_to_write_ends_the_script_naming_int_digits(code: str) -> None:
    end = _run(code)
    assert (end.kind, end.limit) == ("limit", "int_digits")
    assert "int_digits = 4300" in (end.error or "")


def test_a_value_nested_deeper_than_result_depth_is_named() -> None:
    end = _run(
        "t = (1,)\nfor i in range(150):\n    t = (t, t)\nt", CodeModeLimits(result_depth=100)
    )
    assert end.limit == "result_depth"


def test_shared_nested_tuples_as_arguments_never_reach_the_gateway() -> None:
    """The arguments are written in the worker under the gateway's depth limit: the call
    raises there, and the host never sees it."""
    calls: list[Any] = []
    end = _run(
        't = (1,)\nfor i in range(150):\n    t = (t, t)\nawait call_tool("s__deep", {"a": t})',
        calls=calls,
    )
    assert calls == [] and end.kind == "runtime"
    assert "nested deeper than 32 levels" in (end.error or "")


def test_arguments_shared_many_times_over_never_reach_the_gateway() -> None:
    calls: list[Any] = []
    end = _run(DOUBLED + 'await call_tool("s__wide", {"a": x})', calls=calls)
    assert calls == [] and "larger than 1000000 bytes" in (end.error or "")
    end = _run("s = 'a' * 10**6\nawait call_tool('s__wide', {'a': [s] * 300})", calls=calls)
    assert calls == [] and "larger than 1000000 bytes" in (end.error or "")


def test_a_value_comes_back_as_json_text_and_a_string_says_so() -> None:
    end = _run('d = {"k": [1, (2, 3), {4}, b"x", None]}\nf"{d["k"][0]}"')  # 3.12 syntax reads
    assert (end.value, end.is_text) == ('"1"', True)
    end = _run('d = {"k": [1, (2, 3), {4}, b"x", None], 5: 1.5}\nd')
    assert end.value is not None and not end.is_text
    assert json.loads(end.value) == {"k": [1, [2, 3], [4], "x", None], "5": 1.5}


def test_a_script_that_ends_on_a_statement_returns_null() -> None:
    for code in ("x = 1", "for i in range(2):\n    i", "x = 1; y = 2", "if True: 5"):
        end = _run(code)
        assert (end.error, end.value) == (None, "null"), code


def test_a_script_can_neither_replace_the_gateways_writer_nor_call_its_host() -> None:
    """The names the worker holds for the gateway end in a secret drawn per script, and the
    function that made them is gone: rebinding the old names changes nothing, and the host
    is reached only through call_tool, with arguments the writer bounded."""
    end = _run("def _toolroute_finish(v):\n    return ('a' * 100, None, 0, False)\n1")
    assert (end.error, end.value) == (None, "1")
    calls: list[Any] = []
    end = _run("await _toolroute_call('s__x', '{}')", calls=calls)
    assert calls == [] and "NameError" in (end.error or "")
    end = _run("_toolroute_seal(lambda *a: ('{}', None, 2))", calls=calls)
    assert calls == [] and end.kind == "runtime"


def test_a_tool_name_too_long_for_any_tool_never_leaves_the_worker() -> None:
    calls: list[Any] = []
    end = _run("await call_tool('s__' + 'x' * 10**6, {})", calls=calls)
    assert calls == [] and "over 1000 characters" in (end.error or "")


@pytest.mark.parametrize(
    "code",
    [
        "raise ValueError('a' * 10**7)",
        "d = {}\nd['k' * 10**6]",  # the sandbox's own error, quoting the script's data
        "x = 1\nraise RecursionError('memory limit ' + 'a' * 10**6)",
    ],
)
def test_an_error_with_a_huge_message_is_cut_in_the_worker_naming_message_chars(
    code: str,
) -> None:
    """What crosses is the cut message, saying how long it was, the limit named, in a frame
    of the script's own line."""
    end = _run(code)
    assert (end.kind, end.limit) == ("limit", "message_chars"), end
    error = end.error or ""
    assert len(error) < MESSAGE_CHARS + 600 and "characters; message_chars = 1000)" in error
    assert f"line {code.count(chr(10)) + 1}, in <module>" in error, error


def test_an_error_keeps_its_type_its_message_and_the_scripts_line_numbers() -> None:
    end = _run("x = 1\n\nraise KeyError('missing')")
    assert (end.kind, end.limit) == ("runtime", None)
    assert "line 3, in <module>" in (end.error or "") and "KeyError: missing" in (end.error or "")
    end = _run("x = (\n  1,\n  2 +\n)")
    assert end.kind == "syntax" and "line 4" in (end.error or ""), end.error


RUN_WHOLE = {
    "s = '''a\nb\n  c'''\ns": '"a\\nb\\n  c"',  # a string spanning lines keeps its lines
    "x = 1\r\ny = 2\rx + y": "3",  # lines as Python reads them
    "if True:\n\f    x = 3\n\fy = x + 1\ny": "4",  # form feeds in the indentation
    'd = {"k": 1}\nf"{d["k"]}"': '"1"',  # 3.12 syntax this Python cannot parse
}


@pytest.mark.parametrize("code", sorted(RUN_WHOLE))
def test_a_script_runs_as_written_under_the_guard(code: str) -> None:
    end = _run(code)
    assert (end.error, end.value) == (None, RUN_WHOLE[code])


def test_no_line_of_a_script_is_left_outside_the_guard() -> None:
    """Where this Python's tokenizer and the sandbox's parser read strings differently (3.12
    f-strings), the lines the tokenizer takes for a string's are indented all the same: the
    error raised on one is cut in the worker, and a script built to leave the guard there
    (its `raise` at the module's level, then a block taking the rest) does not run at all."""
    code = "x = f\"{\"'''\"}\"\nraise ValueError('a' * 10**6)\ny = \"'''\""
    assert all(line.startswith(" ") for line in guarded(code, "g").split("\n")[1:])
    end = _run(code)
    assert (end.kind, end.limit) == ("limit", "message_chars"), end
    end = _run(code.replace("y = \"'''\"", "if \"'''\":\ny = 1"))
    assert end.kind == "syntax", end
    end = _run("x = 1\n\fraise ValueError('a' * 10**6)")  # a form feed resets the column
    assert (end.kind, end.limit) == ("limit", "message_chars"), end


# -- the writer: the same source the worker runs, here in CPython --------------------------

WRITE = bounded_writer()
LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
TREES = st.recursive(
    LEAVES,
    lambda kids: (
        st.lists(kids, max_size=5)
        | st.tuples(kids, kids)
        | st.dictionaries(st.text(max_size=8), kids, max_size=5)
    ),
    max_leaves=30,
)


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list | tuple):
        return 1 + max((_depth(v) for v in value), default=0)
    return 1


def _shared(value: Any, times: int) -> Any:
    """``value`` doubled ``times`` times: [v, v], then [[v, v], [v, v]], … (shared)."""
    for _ in range(times):
        value = [value, value]
    return value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=TREES, max_bytes=st.integers(2, 2000), max_depth=st.integers(1, 8))
def test_the_writer_writes_json_dumps_or_names_the_first_limit_passed(
    value: Any, max_bytes: int, max_depth: int
) -> None:
    text, refused, size = WRITE(value, max_bytes, max_depth, True, True)
    expected = json.dumps(value, ensure_ascii=False)
    too_deep = _depth(value) > max_depth
    too_big = len(expected.encode("utf-8", "surrogatepass")) > max_bytes
    if text is not None:
        assert refused is None and not too_deep and not too_big
        assert text == expected and size == len(text.encode("utf-8", "surrogatepass"))
    else:
        assert refused in {"bytes", "depth"} and (too_deep or too_big)
        assert (refused == "bytes") <= too_big and (refused == "depth") <= too_deep


@settings(max_examples=100, deadline=None)
@given(value=TREES, times=st.integers(0, 60), max_bytes=st.integers(2, 5000))
def test_the_writer_writes_a_shared_structure_only_when_its_json_fits(
    value: Any, times: int, max_bytes: int
) -> None:
    size = len(json.dumps(value, ensure_ascii=False).encode())
    for _ in range(times):  # [v, v]: both halves, two brackets, one separator
        size = 2 * size + 4
    text, refused, _ = WRITE(_shared(value, times), max_bytes, 100, False, True)
    assert (text is None) == (size > max_bytes) and (refused is None) == (text is not None)
    if text is not None:
        assert len(text.encode()) == size
        json.loads(text)


def test_the_writer_names_integers_too_long_to_write() -> None:
    assert WRITE(10**5000, 10**6, 10, False, True)[1] == "digits"
    assert WRITE({10**5000: 1}, 10**6, 10, False, True)[1] == "digits"
    assert WRITE(10**4299, 10**6, 10, True, True)[1] is None


# -- the gateway's walk of a call's arguments -------------------------------------------

ARGUMENTS = st.dictionaries(st.text(max_size=8), TREES, max_size=5)


@settings(max_examples=300, deadline=None)
@given(arguments=ARGUMENTS, most=st.integers(2, 2000), deepest=st.integers(2, 8))
def test_argument_checks_refuse_exactly_what_is_too_deep_or_too_large(
    arguments: dict[str, Any], most: int, deepest: int
) -> None:
    saved = (checks.MAX_ARGUMENT_BYTES, checks.MAX_ARGUMENT_DEPTH)
    checks.MAX_ARGUMENT_BYTES, checks.MAX_ARGUMENT_DEPTH = most, deepest
    try:
        problem = checks.check_arguments(arguments)
    finally:
        checks.MAX_ARGUMENT_BYTES, checks.MAX_ARGUMENT_DEPTH = saved
    too_deep = _depth(arguments) > deepest
    size = len(json.dumps(arguments, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    assert (problem is not None) == (too_deep or size > most), (problem, size)
    if problem is not None and not too_deep:
        assert "larger than" in problem


class _Counted(list[Any]):
    """A list that counts how often it is walked."""

    walks = 0

    def __iter__(self) -> Any:
        _Counted.walks += 1
        return super().__iter__()


def test_argument_checks_stop_walking_a_shared_structure_at_their_limit() -> None:
    """A structure of 21 shared levels has two million paths; the walk stops once its count
    passes the limit instead of visiting them all."""
    value: Any = []
    for _ in range(21):
        value = _Counted([value, value])
    _Counted.walks = 0
    problem = checks.check_arguments({"a": value})
    assert problem is not None and "larger than" in problem
    assert _Counted.walks <= checks.MAX_ARGUMENT_BYTES // 2


def test_argument_checks_walk_tuples_and_refuse_what_json_cannot_hold() -> None:
    deep: Any = (1,)
    for _ in range(40):
        deep = (deep, deep)
    assert "nested deeper" in (checks.check_arguments({"a": deep}) or "")
    assert "plain JSON" in (checks.check_arguments({"a": {1, 2}}) or "")
    assert "4300 digits" in (checks.check_arguments({"a": 10**5000}) or "")
    assert checks.check_arguments({"a": (1, 2), "b": [math.pi, None, True]}) is None


# -- the worker, over generated values ----------------------------------------------------


def _source(value: Any) -> str:
    """Python source building ``value`` in the sandbox."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    if isinstance(value, list):
        return "[" + ", ".join(_source(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + "".join(_source(v) + ", " for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_source(k)}: {_source(v)}" for k, v in value.items()) + "}"
    return repr(value)


SCRIPT_VALUES = st.recursive(
    LEAVES | st.integers().map(lambda n: n**7) | st.binary(max_size=10),
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=5), kids, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=SCRIPT_VALUES, times=st.integers(0, 40))
def test_what_the_worker_hands_back_is_json_within_result_bytes_or_a_named_limit(
    value: Any, times: int
) -> None:
    limits = CodeModeLimits(result_bytes=2048, result_depth=20)
    code = f"x = {_source(value)}\nfor i in range({times}):\n    x = [x, x]\nx"
    end = _run(code, limits)
    if end.value is None:
        assert end.kind == "limit" and end.limit in NAMED, end
    else:
        assert len(end.value.encode()) <= limits.result_bytes
        text, refused, _ = WRITE(_shared(value, times), 2048, 20, False, True)
        assert refused is None and json.loads(end.value) == json.loads(text or "")


# -- fair slots --------------------------------------------------------------------------


def test_a_client_holds_at_most_its_share_and_a_freed_slot_goes_to_another_client() -> None:
    order: list[str] = []

    async def main() -> None:
        slots = FairSlots(total=2, per_client=1)
        release = anyio.Event()

        async def bob(n: int) -> None:
            await slots.acquire("bob")
            order.append(f"bob{n}")
            await release.wait()
            slots.release("bob")

        async def alice() -> None:
            await slots.acquire("alice")
            order.append("alice")
            slots.release("alice")
            release.set()

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(bob, 1)
                tg.start_soon(bob, 2)
                await anyio.wait_all_tasks_blocked()
                tg.start_soon(alice)

    anyio.run(main)
    assert order == ["bob1", "alice", "bob2"]


def test_another_clients_script_runs_while_one_client_has_two_scripts_waiting_on_a_tool() -> None:
    """concurrent = 2: bob's two scripts awaiting a slow tool take one slot, alice's
    ``1 + 1`` the other, and bob's second script's wait for his slot is not charged to its
    wall_s."""
    done: list[str] = []

    async def main() -> None:
        sandbox = Sandbox(CodeModeLimits(wall_s=3, concurrent=2, per_client=1))
        release = anyio.Event()

        async def slow(name: str, arguments: dict[str, Any]) -> Any:
            await release.wait()
            return {}

        async def fast(name: str, arguments: dict[str, Any]) -> Any:
            return {}

        async def bob(n: int) -> None:
            end = await sandbox.run('await call_tool("s__slow", {})\n2', slow, "bob")
            assert end.value == "2", end
            done.append(f"bob{n}")

        async def alice() -> None:
            end = await sandbox.run("1 + 1", fast, "alice")
            assert end.value == "2", end
            done.append("alice")
            release.set()

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(bob, 1)
                tg.start_soon(bob, 2)
                tg.start_soon(alice)

    anyio.run(main)
    assert done[0] == "alice" and sorted(done) == ["alice", "bob1", "bob2"]


def test_the_wait_for_a_slot_is_not_charged_to_the_scripts_wall_s() -> None:
    """One slot: bob's script holds it until its wall_s ends it; alice's script, queued all
    that time, then gets its own whole wall_s."""

    async def main() -> None:
        sandbox = Sandbox(CodeModeLimits(wall_s=1.5, concurrent=1, per_client=1))

        async def call(name: str, arguments: dict[str, Any]) -> Any:
            await anyio.sleep(float(arguments["s"]))  # the tool's own time
            return {}

        async def bob() -> None:
            end = await sandbox.run('await call_tool("s__slow", {"s": 30})', call, "bob")
            assert end.limit == "wall_s", end

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(bob)
                await anyio.wait_all_tasks_blocked()
                end = await sandbox.run('await call_tool("s__slow", {"s": 0.3})\n7', call, "al")
        assert (end.error, end.value) == (None, "7")

    anyio.run(main)


def test_a_script_that_cannot_get_a_slot_is_refused_naming_queue_s() -> None:
    async def main() -> None:
        sandbox = Sandbox(CodeModeLimits(concurrent=1, per_client=1, queue_s=0.5))
        await sandbox._slots.acquire("bob")
        end = await sandbox.run("1", lambda n, a: anyio.sleep(0), "alice")
        assert (end.limit, end.calls) == ("queue_s", 0) and "queue_s = 0.5" in (end.error or "")

    anyio.run(main)


# -- the page store --------------------------------------------------------------------


def test_one_clients_results_never_evict_anothers() -> None:
    pages = Pages(page_bytes=100, ttl_s=60, max_bytes=1000, owner_bytes=400)
    alice, bob = Owner("token:alice"), Owner("token:bob")
    kept = pages.put(alice, "a" * 300)
    assert kept is not None
    for _ in range(10):  # bob's own oldest go as he passes his quota
        assert pages.put(bob, "b" * 300) is not None
    assert pages.read(alice, kept.handle, 2) is not None
    assert pages.held_by(bob) <= 400
    carol = [Owner(f"token:c{n}") for n in range(3)]
    assert pages.put(carol[0], "c" * 300) is not None
    assert pages.put(carol[1], "c" * 300) is None  # full of others' pages: refused
    assert pages.read(alice, kept.handle, 0) is not None


def test_a_handle_is_bound_to_its_connection_and_dies_with_it() -> None:
    class Connection:
        pass

    pages = Pages(page_bytes=100, ttl_s=60, max_bytes=1000)
    first, second = Connection(), Connection()
    owner = Owner.of("", first)
    page = pages.put(owner, "x" * 200)
    assert page is not None
    assert pages.read(Owner.of("", first), page.handle, 1) is not None
    assert pages.read(Owner.of("", second), page.handle, 1) is None
    assert pages.read(Owner.of("alice", None), page.handle, 1) is None
    del first, owner
    assert pages.read(Owner("anonymous"), page.handle, 0) is None and pages.bytes_held == 0
