"""No import cycle among the project's modules (fairmiss, flows, tasks), imports inside functions included.

The graph is grimp's (import-linter's engine), which reads every import statement of every module, at
any depth. A package importing its own submodule (``fairmiss/datasets/__init__.py`` re-exporting from
``fairmiss.datasets.acquire``) is how packages present their face and is not counted as a cycle when
the submodule does not import the package back.
"""
from __future__ import annotations

import sys

import grimp


def _cycles(graph, modules):
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in modules:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for m in sorted(modules):
        if m not in index:
            visit(m)
    return out


def test_no_import_cycle_among_project_modules():
    graph = grimp.build_graph("fairmiss", "flows", "tasks")
    modules = set(graph.modules)
    assert len(modules) > 60
    assert _cycles(graph, modules) == []


def test_the_cycle_finder_finds_a_cycle():
    class G:
        modules = {"a", "b", "c"}

        def find_modules_directly_imported_by(self, m):
            return {"a": {"b"}, "b": {"c"}, "c": {"a"}}[m]

    assert _cycles(G(), G.modules) == [["a", "b", "c"]]
