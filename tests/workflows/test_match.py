"""Match expression v1: strict equality, ordered comparisons, undefined, errors."""

import pytest

from webapp.workflows.definition import match
from webapp.workflows.definition.match import MatchError, evaluate, persist


def ev(node, payload):
    return evaluate(persist(node), payload)


def test_eq_is_strict():
    assert ev(match.eq("n", 1), {"n": 1})
    assert ev(match.eq("n", 1), {"n": 1.0})
    assert not ev(match.eq("n", 1), {"n": True})
    assert not ev(match.eq("n", 1), {"n": "1"})
    assert not ev(match.eq("o", {"a": 1}), {"o": {"a": 1}})  # objects never strictly equal
    assert ev(match.eq("x", None), {"x": None})
    assert ev(match.ne("n", 1), {"n": "1"})


def test_missing_path_is_undefined():
    assert not ev(match.eq("a.b", None), {"a": {}})
    assert ev(match.ne("a.b", None), {"a": {}})
    assert ev(match.eq("a.b.0", "x"), {"a": {"b": ["x"]}})
    assert not ev(match.eq("a.b.3", "x"), {"a": {"b": ["x"]}})


def test_in_and_ordered():
    assert ev(match.in_("s", ["a", "b"]), {"s": "b"})
    assert not ev(match.in_("s", [1]), {"s": True})
    assert ev(match.gt("n", 1), {"n": 2})
    assert ev(match.gte("s", "b"), {"s": "b"})
    assert not ev(match.lt("n", 5), {"n": "3"})  # string vs number: false
    assert not ev(match.lte("n", 5), {"n": None})
    assert not ev(match.gt("n", 0), {"n": True})


def test_and_or():
    node = match.all_(match.eq("a", 1), match.any_(match.eq("b", 2), match.eq("c", 3)))
    assert ev(node, {"a": 1, "c": 3})
    assert not ev(node, {"a": 1, "c": 4})
    assert evaluate(None, {"x": 1})  # no expression = match


def test_unknown_kind_or_version_is_an_error():
    with pytest.raises(MatchError):
        evaluate({"version": 2, "expr": match.eq("a", 1)}, {})
    with pytest.raises(MatchError):
        evaluate({"version": 1, "expr": {"kind": "xor", "nodes": []}}, {})
    with pytest.raises(MatchError):
        evaluate(
            {
                "version": 1,
                "expr": {"kind": "atom", "path": ["a"], "op": {"op": "like", "value": 1}},
            },
            {},
        )
    with pytest.raises(MatchError):
        persist({"kind": "atom"})


def test_persisted_shape():
    assert persist(match.eq("user.id", "u1")) == {
        "version": 1,
        "expr": {"kind": "atom", "path": ["user", "id"], "op": {"op": "eq", "value": "u1"}},
    }
