"""The small world the recall parity tests run in: a store built from
sample_sessions/ (its indexes built, so no first-run note differs between
two runs), an empty store, and the --queries files they name. "@name" in
a command line stands for one of its paths. A test module imports the
`world` and `home` fixtures from here."""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_sessions"
LONG = "payments timeout checkout " * 500          # 13,000 characters: searched as its first 2,000, with a note


def build_world(root: Path) -> dict[str, str]:
    """The paths of the world built under `root`, by "@name"."""
    from stores.store import Store
    store = Store(root / "store")
    list(store.ingest([str(SAMPLES)]))
    for mode in ("fulltext", "vector", "hybrid"):
        store.recall("deploy", mode=mode)
    files = {
        "@good": '{"id": "a", "query": "payments timeout"}\n{"id": "b", "query": "release tarball checksum", "k": 2}\n',
        "@bad": ('{"query": "payments timeout"}\n{"query": "the of"}\nnot json\n\n{"id": 3, "query": "x", "k": 0}\n'
                 '{"query": "deploy", "k": "3"}\n[1]\n{"query": "zebra quux", "mode": "fulltext"}\n'
                 '{"query": "deploy", "kind": ["user", 7]}\n{"query": "deploy", "rerank": 1}\n'),
        "@empty": "",
        "@blank": "\n\n",
        "@nohit": '{"query": "zebra quux", "mode": "fulltext"}\n',
    }
    paths = {"@store": str(root / "store"), "@nostore": str(root / "no-store"), "@missing": str(root / "missing.jsonl"),
             "@dir": str(root)}
    for name, text in files.items():
        (root / f"{name[1:]}.jsonl").write_text(text)
        paths[name] = str(root / f"{name[1:]}.jsonl")
    empty = Store(root / "empty-store")                  # a store with no event in it yet
    list(empty.ingest([paths["@empty"]]))
    paths["@emptystore"] = str(empty.dir)
    return paths


def argv(template: list[str], world: dict) -> list[str]:
    """`template` with each "@name" replaced by its path in `world`."""
    out = []
    for arg in template:
        for name in sorted(world, key=len, reverse=True):
            arg = arg.replace(name, world[name])
        out.append(arg)
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """build_world's paths, one world per test module."""
    return build_world(tmp_path_factory.mktemp("recall-world"))


@pytest.fixture()
def home(world, monkeypatch):
    """The world, its store the default one (TRACE_HOME)."""
    monkeypatch.setenv("TRACE_HOME", world["@store"])
    return world
