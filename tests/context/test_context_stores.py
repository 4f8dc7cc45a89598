"""Context stores for every (scope, persistence kind) pair: snapshot, put, put_all, clear, atomic files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memlane.context import ContextScope, FileContextStore, MemoryContextStore, PersistenceKind
from memlane.context.store import project_store, store_path

PAIRS = [(scope, kind) for scope in ContextScope for kind in PersistenceKind]


@pytest.mark.parametrize(("scope", "kind"), PAIRS, ids=[f"{s.value}-{k.value}" for s, k in PAIRS])
def test_memory_store_every_scope_and_kind(scope: ContextScope, kind: PersistenceKind) -> None:
    store = MemoryContextStore(scope, kind, {"a": "1"})
    assert (store.scope, store.kind) == (scope, kind)
    store.put("b", "2")
    store.put_all({"c": [1, 2], "a": None})  # None removes
    snap = store.snapshot()
    assert snap == {"b": "2", "c": [1, 2]}
    snap["b"] = "changed"
    assert store.snapshot()["b"] == "2"  # a snapshot is a copy
    store.put_all({"d": True}, remove=["b"])
    assert store.snapshot() == {"c": [1, 2], "d": True}
    store.clear()
    assert store.snapshot() == {}


@pytest.mark.parametrize(("scope", "kind"), PAIRS, ids=[f"{s.value}-{k.value}" for s, k in PAIRS])
def test_file_store_every_scope_and_kind(scope: ContextScope, kind: PersistenceKind, memlane_home: Path) -> None:
    store = project_store("shop-1234abcd", scope, kind)
    assert store.path == store_path("shop-1234abcd", scope, kind)
    assert store.path.startswith(str(memlane_home)) and store.path.endswith(f"{scope.value}-{kind.value}.json")
    assert store.snapshot() == {} and not store.exists()
    store.put("rules", "line one\nline two")
    store.put_all({"n": 3, "rules": None, "x": "y"})
    assert store.snapshot() == {"n": 3, "x": "y"}
    other = project_store("shop-1234abcd", scope, kind)  # another process's view: reads the file
    assert other.snapshot() == {"n": 3, "x": "y"}
    data = json.loads(Path(store.path).read_text())
    assert data["scope"] == scope.value and data["kind"] == kind.value and data["version"] == 1
    assert oct(os.stat(store.path).st_mode)[-3:] == "600"
    assert [p.name for p in Path(store.path).parent.iterdir() if p.name.endswith(".tmp")] == []
    other.put("z", "from the other one")
    assert store.snapshot()["z"] == "from the other one"  # re-read when the file changed
    store.clear()
    assert other.snapshot() == {}


def test_file_store_keeps_meta_and_survives_corruption(tmp_path: Path) -> None:
    path = str(tmp_path / "ctx" / "app-persistent.json")
    store = FileContextStore(path, ContextScope.APP, PersistenceKind.PERSISTENT)
    store.write({"a": "1"}, meta={"root": "/x"})
    store.put("b", "2")
    assert store.meta() == {"root": "/x"} and store.snapshot() == {"a": "1", "b": "2"}
    Path(path).write_text("{not json")
    fresh = FileContextStore(path, ContextScope.APP, PersistenceKind.PERSISTENT)
    assert fresh.snapshot() == {} and fresh.meta() == {}
    fresh.put("c", "3")  # the next write replaces the corrupt file
    assert json.loads(Path(path).read_text())["entries"] == {"c": "3"}


def test_failed_write_leaves_the_old_file(tmp_path: Path) -> None:
    path = str(tmp_path / "app-volatile.json")
    store = FileContextStore(path, ContextScope.APP, PersistenceKind.VOLATILE)
    store.put("a", "1")
    with pytest.raises(TypeError):
        store.put("bad", object())  # not JSON: the write fails before the replace
    assert FileContextStore(path, ContextScope.APP, PersistenceKind.VOLATILE).snapshot() == {"a": "1"}
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
