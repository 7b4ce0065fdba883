"""The architecture, checked from the source: the import graph of ``hnowmodel`` and ``calibrate`` has no cycle, no
module imports a layer above its own, ``hnowmodel`` never imports ``calibrate`` or ``mpi4py``, no source file cites a
file outside the repository, ``import hnowmodel`` stays light, and no module of ``hnowmodel``, ``calibrate`` or
``experiments`` is over 600 lines nor any function over 80.

The graph is read with :mod:`ast` (every ``import``, at module level and inside functions, relative imports resolved;
``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``), so an import hidden in a
function to dodge a cycle still counts (so does one under ``if TYPE_CHECKING:``: a dependency all the same). An
import of ``a.b.c`` is an edge to ``a.b.c`` only (not to the packages ``a`` and ``a.b`` that Python also runs): the
layers are about what a module uses. The layer table below is the one
in ``docs/architecture.md``; keep the two the same (a test compares them).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx

from tests.helpers import fresh_python

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("hnowmodel", "calibrate")

# The layers of hnowmodel, lowest first: a module may import its own layer and the layers below it, never above.
# Keys are module-name prefixes (matched on whole dotted parts; the longest match wins; a ``*`` part matches any one
# part), so a module that a refactor adds inside a package (``hnowmodel.flow.engine``, ``hnowmodel.jobs.compare``) is
# in its package's layer, and a library package added under ``hnowmodel.libraries`` needs no entry of its own.
LAYERS: dict[str, int] = {
    # L0: leaves - errors, file I/O, sizes, units, printed tables
    "hnowmodel.errors": 0,
    "hnowmodel.io": 0,
    "hnowmodel.stepfiles": 0,  # a calibration's finished steps (versioned JSON): the ranks write, the jobs check
    "hnowmodel.lazy": 0,  # the packages' names imported on first use (PEP 562)
    "hnowmodel.sizes": 0,
    "hnowmodel.units": 0,
    "hnowmodel.tables": 0,
    "hnowmodel.mpi_programs": 0,  # finding mpiexec/srun/mpicc: read by jobs and by the MPICH export alike
    # L1: what the model reads - the layout of ranks on hosts, the profile (its parameters)
    "hnowmodel.layout": 1,
    "hnowmodel.params": 1,
    # L2: trees (every family)
    "hnowmodel.trees": 2,
    # L3: the model engine - predictors, the flow engine and its queue disciplines, variants and schedules, the
    # operation registry, the reference (paper) numbers, the emulated testbed, the fit report
    "hnowmodel.closedform": 3,  # the paper's closed-form engine (hm.predict.bcast/scatter/gather are its functions)
    "hnowmodel.flow": 3,
    "hnowmodel.variants": 3,
    "hnowmodel.runopts": 3,
    "hnowmodel.schedules": 3,  # collective algorithms as message schedules, evaluated by both engines
    "hnowmodel.movement": 3,
    "hnowmodel.ops": 3,
    # the MPI libraries, one package each (algorithms and how they are pinned, their file formats): read by the registry
    "hnowmodel.libraries": 3,
    "hnowmodel.reference": 3,
    "hnowmodel.testbed": 3,
    "hnowmodel.fitreport": 3,
    # L4: the search for the best tree
    "hnowmodel.search": 4,
    # L5: what composes the model for the library - tree specs, options, predictions, reports, benchmarks, the
    # export to MPI libraries (and its per-library backends)
    "hnowmodel.treespec": 5,
    "hnowmodel.predict": 5,  # the one public entry, hm.predict: tree specs and variants over both engines
    "hnowmodel.options": 5,
    "hnowmodel.predictions": 5,
    "hnowmodel.report": 5,
    "hnowmodel.bench_registry": 5,
    "hnowmodel.export": 5,
    "hnowmodel.libraries.*.export": 5,  # each library's export backend (``*``: any one dotted part, every library)
    "hnowmodel.outside": 5,  # outside benchmarks' output (IMB, OSU) read and checked against a profile
    # L6: infrastructure, not model - jobs: what runs under MPI, started as a child process (specs, launcher, wire
    # protocol, results, API); the virtual cluster (network namespaces, Slurm) the jobs run on
    "hnowmodel.jobs": 6,
    "hnowmodel.cluster": 6,  # imports only L0 (errors, io, mpi_programs); jobs, demo and cli start clusters
    # L7: the demo (calibrate, compare, report in one call), the tuning (export per job shape, verified through the
    # jobs) and the package's facade (``import hnowmodel``)
    "hnowmodel.demo": 7,
    "hnowmodel.tuning": 7,
    # L8: the command line: parses and prints, one library call per command
    "hnowmodel.cli": 8,
}
FACADE = "hnowmodel"  # the package itself re-exports the public API: a layer-7 module (only the CLI may use it)
FACADE_LAYER = 7

# calibrate (the measuring side, under MPI) sits beside the library: it may use hnowmodel up to this layer ...
CALIBRATE_MAX_LAYER = 5
# ... and, above it, only the modules of its protocol with the launcher: the wire format of its output lines and the
# machine's MPI lock (the C kernels' compiler takes it too). Nothing else of jobs, and never demo or cli.
CALIBRATE_PROTOCOL = ("hnowmodel.jobs.wire", "hnowmodel.jobs.lock")

# What the model and library never import (at any level: the MPI side is calibrate's)
HNOWMODEL_NEVER = ("calibrate", "mpi4py")
# Files outside this repository that the source must not cite (the repository stands alone; cite docs/...)
OUTSIDE_FILES = ("DESIGN.md", "../shared")
# What ``import hnowmodel`` must not load (none of them is needed to predict; today it loads none of them)
HEAVY = ("mpi4py", "matplotlib", "scipy", "networkx", "calibrate")

# The house rules on size, in the two packages and the experiments: no module over MAX_MODULE_LINES lines (its
# newlines), no function over MAX_FUNCTION_LINES (from ``def`` to its last line, decorators excluded)
SHAPE_DIRS = ("hnowmodel", "calibrate", "experiments")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
# Modules still over MAX_MODULE_LINES, each with what removes it (their functions are checked all the same): none
LONG_MODULES_KNOWN: set[str] = set()


# --- the graph ---------------------------------------------------------------------------------------------------


def _modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Every module of ``packages`` under ``root``: dotted name -> file (a package is its ``__init__.py``)."""
    found = {}
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: set[str]) -> list[tuple[str, int]]:
    """What module ``name`` imports, anywhere in its file: (dotted target, line). Relative imports are resolved;
    ``from X import y`` names ``X.y`` when that is one of ``modules``, else ``X``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.append((sub if sub in modules else base, node.lineno))
    return out


def _own(target: str, modules: set[str]) -> str | None:
    """The module of the two packages that an import of ``target`` names (``a.b.C`` -> ``a.b``), or None."""
    while target:
        if target in modules:
            return target
        target = target.rpartition(".")[0]
    return None


def import_graph(
    root: Path = ROOT, packages: tuple[str, ...] = PACKAGES
) -> tuple[nx.DiGraph, list[tuple[str, str, int]]]:
    """The import graph between the modules of ``packages`` (``hnowmodel`` and ``calibrate``; edge attribute
    ``line``: where the import is), and every import of an outside module as (module, target, line)."""
    modules = _modules(root, packages)
    names = set(modules)
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name, file=str(path.relative_to(root)))
    outside = []
    for name, path in modules.items():
        for target, line in _imports(name, path, names):
            own = _own(target, names)
            if own is None:
                outside.append((name, target, line))
            elif own != name:
                graph.add_edge(name, own, line=line)
    return graph, outside


def layer_of(module: str) -> int | None:
    """The layer of an ``hnowmodel`` module (longest prefix of :data:`LAYERS`), or None when no entry covers it.

    >>> layer_of("hnowmodel.flow.gather"), layer_of("hnowmodel.jobs.compare_job"), layer_of("hnowmodel.flowers")
    (3, 6, None)
    >>> layer_of("hnowmodel.libraries.mpich.export"), layer_of("hnowmodel.libraries.mpich.selection")
    (5, 3)
    """
    if module == FACADE:
        return FACADE_LAYER
    best, layer = -1, None
    for prefix, lay in LAYERS.items():
        if prefix.endswith("_"):  # a family of modules: hnowmodel.flow_*
            covers = module.startswith(prefix)
        elif "*" in prefix:  # one part that matches any: hnowmodel.libraries.*.export
            want, parts = prefix.split("."), module.split(".")
            covers = len(parts) >= len(want) and all(w in ("*", p) for w, p in zip(want, parts, strict=False))
        else:
            covers = module == prefix or module.startswith(prefix + ".")
        if covers and len(prefix) > best:
            best, layer = len(prefix), lay
    return layer


def _where(graph: nx.DiGraph, a: str, b: str) -> str:
    return f"{a} -> {b} ({graph.nodes[a]['file']}:{graph.edges[a, b]['line']})"


def layer_violations(graph: nx.DiGraph) -> list[str]:
    """Every import that breaks the layers, one line each."""
    bad = []
    for mod in sorted(graph.nodes):
        if mod.startswith("hnowmodel") and layer_of(mod) is None:
            bad.append(f"{mod}: in no layer (add its prefix to LAYERS here and to docs/architecture.md)")
    for a, b in sorted(graph.edges):
        if a.startswith("hnowmodel") and b.startswith("calibrate"):
            bad.append(f"hnowmodel imports calibrate: {_where(graph, a, b)}")
        elif a.startswith("hnowmodel"):
            la, lb = layer_of(a), layer_of(b)
            if la is not None and lb is not None and lb > la:
                bad.append(f"L{la} imports L{lb}: {_where(graph, a, b)}")
        elif b.startswith("hnowmodel"):  # calibrate -> hnowmodel
            lb = layer_of(b)
            if lb is not None and lb > CALIBRATE_MAX_LAYER and b not in CALIBRATE_PROTOCOL:
                bad.append(
                    f"calibrate imports L{lb} (only <= L{CALIBRATE_MAX_LAYER} + protocol): {_where(graph, a, b)}"
                )
    return bad


def cycles(graph: nx.DiGraph) -> list[str]:
    """One cycle per strongly connected component of more than one module, written out with its import lines, and
    every import inside that component (the ones to cut are among them)."""
    out = []
    for comp in sorted(nx.strongly_connected_components(graph), key=lambda c: sorted(c)):
        if len(comp) < 2:
            continue
        cyc = nx.find_cycle(graph.subgraph(comp))
        inside = sorted(graph.subgraph(comp).edges)
        out.append(
            f"cycle among {sorted(comp)}: "
            + "; ".join(_where(graph, a, b) for a, b in cyc)
            + "\n    (imports inside it: "
            + "; ".join(_where(graph, a, b) for a, b in inside)
            + ")"
        )
    return out


def outside_citations() -> list[str]:
    """Every line of a ``.py`` file of the two packages that cites a file outside the repository."""
    bad = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for i, text in enumerate(path.read_text().splitlines(), 1):
                if any(word in text for word in OUTSIDE_FILES):
                    bad.append(f"{path.relative_to(ROOT)}:{i}: {text.strip()[:100]}")
    return bad


#: Where operation names may be listed: the operation registry, and each MPI library's package (its own tables of the
#: operations it implements: control variables, rule ids, algorithm numbers).
OP_LISTS_ALLOWED = ("hnowmodel/ops.py", "hnowmodel/libraries/")


def operation_lists(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Every list, tuple, set or dict (its keys) written in the source that names two or more registered operations
    (string literals), outside :data:`OP_LISTS_ALLOWED` and ``__all__``: a second list of the operations, which the
    next operation would have to be added to by hand. Read the registry instead (``hnowmodel.ops.names()``, an
    ``Operation``'s fields)."""
    from hnowmodel import ops

    names = set(ops.names())
    bad = []
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel.startswith(OP_LISTS_ALLOWED):
                continue
            tree = ast.parse(path.read_text(), filename=rel)
            exempt = {
                id(node.value)
                for node in ast.walk(tree)
                if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets)
            }
            for node in ast.walk(tree):
                if id(node) in exempt:
                    continue
                elts = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
                if not isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)) or elts is None:
                    continue
                found = {e.value for e in elts if isinstance(e, ast.Constant) and e.value in names}
                if len(found) >= 2:
                    bad.append(f"{rel}:{node.lineno}: lists the operations {sorted(found)}")
    return bad


def forbidden_imports(outside: list[tuple[str, str, int]]) -> list[str]:
    """Imports of mpi4py (or calibrate) by hnowmodel modules, from the imports of outside modules."""
    return [
        f"{mod} imports {target} (line {line})"
        for mod, target, line in outside
        if mod.startswith("hnowmodel") and target.split(".")[0] in HNOWMODEL_NEVER
    ]


def shape_violations(
    root: Path = ROOT, dirs: tuple[str, ...] = SHAPE_DIRS, known: frozenset[str] | set[str] = frozenset()
) -> list[str]:
    """Every module of ``dirs`` over :data:`MAX_MODULE_LINES` lines (counted as its newlines; ``known``: relative
    paths let off) and every function over :data:`MAX_FUNCTION_LINES` (``def`` to its last line, decorators
    excluded; methods and nested functions too), one line each naming the file and the line count."""
    bad = []
    for top in dirs:
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            text = path.read_text()
            lines = text.count("\n")
            if lines > MAX_MODULE_LINES and rel not in known:
                bad.append(f"{rel}: {lines} lines (a module has at most {MAX_MODULE_LINES}: split it)")
            for node in ast.walk(ast.parse(text, filename=str(path))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    length = node.end_lineno - node.lineno + 1
                    if length > MAX_FUNCTION_LINES:
                        bad.append(
                            f"{rel}:{node.lineno}: function {node.name} has {length} lines (at most "
                            f"{MAX_FUNCTION_LINES}: extract helpers)"
                        )
    return bad


# --- the tests -----------------------------------------------------------------------------------------------------


def test_the_graph_reader_sees_imports_inside_functions_and_resolves_relative_ones(tmp_path):
    """The reader itself, on a made-up package: imports inside functions count, relative imports are resolved
    (``from . import b`` is the module ``b``; ``from ..a import f`` is ``a``), outside imports are listed, and the
    cycle it makes is found."""
    files = {
        "p/__init__.py": "from .a import f\n",
        "p/a.py": "import json\n\ndef f():\n    from . import b\n    return b\n",
        "p/b.py": "from .sub import c\n",
        "p/sub/__init__.py": "",
        "p/sub/c.py": "from .. import a\nfrom ..a import f\nimport mpi4py.MPI\n\ndef g():\n    import p.b\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    graph, outside = import_graph(tmp_path, ("p",))
    assert sorted(graph.edges) == [
        ("p", "p.a"),
        ("p.a", "p.b"),
        ("p.b", "p.sub.c"),
        ("p.sub.c", "p.a"),
        ("p.sub.c", "p.b"),
    ]
    assert graph.edges["p.a", "p.b"]["line"] == 4
    assert sorted((m, t) for m, t, _ in outside) == [("p.a", "json"), ("p.sub.c", "mpi4py.MPI")]
    (found,) = cycles(graph)
    assert "p.a -> p.b" in found and "p.b -> p.sub.c" in found
    # the real packages: calibrate reaches hnowmodel, and the table covers modules a refactor may add
    real, _ = import_graph()
    assert any(a.startswith("calibrate") and b.startswith("hnowmodel") for a, b in real.edges)
    assert layer_of("hnowmodel.export.make") == 5 and layer_of("hnowmodel.cli.compare") == 8
    assert layer_of("hnowmodel.libraries.openmpi.export") == 5 and layer_of("hnowmodel.libraries.openmpi.rules") == 3
    assert layer_of("hnowmodel") == FACADE_LAYER and layer_of("hnowmodel.newthing") is None


def test_hnowmodel_never_imports_calibrate_or_mpi4py():
    graph, outside = import_graph()
    bad = forbidden_imports(outside)
    bad += [_where(graph, a, b) for a, b in graph.edges if a.startswith("hnowmodel") and b.startswith("calibrate")]
    assert not bad, "hnowmodel imports what is calibrate's:\n" + "\n".join(bad)


def test_layers_hold_no_cycle_no_upward_import_no_outside_citation():
    graph, _ = import_graph()
    found = cycles(graph) + layer_violations(graph) + outside_citations()
    assert not found, f"{len(found)} architecture violations:\n" + "\n".join(found)


def test_operation_names_are_listed_only_in_the_registry(tmp_path):
    """Adding an operation is one registry entry: no other module keeps a list of the operations (the reader itself
    is checked on a made-up package first)."""
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.py").write_text(
        '__all__ = ["bcast", "gather"]\nOPS = ("bcast", "gather")\nONE = {"bcast": 1}\n'
        'T = {"scatter": 1, "gather": 2}\n'
    )
    assert operation_lists(tmp_path, ("p",)) == [
        "p/a.py:2: lists the operations ['bcast', 'gather']",
        "p/a.py:4: lists the operations ['gather', 'scatter']",
    ]
    found = operation_lists()
    assert not found, "operation names listed outside the registry:\n" + "\n".join(found)


def test_import_hnowmodel_stays_light():
    """``import hnowmodel`` loads the model and the library, not MPI, plotting, fitting or graph packages."""
    code = f"import sys, hnowmodel; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    loaded = fresh_python(code, cwd=ROOT)
    assert loaded == [], f"import hnowmodel loads {loaded}"


def _function(name: str, lines: int, indent: str = "") -> str:
    """The text of a function of ``lines`` lines (its ``def``, then assignments), indented by ``indent``."""
    return f"{indent}def {name}():\n" + "".join(f"{indent}    x{i} = {i}\n" for i in range(lines - 1))


def test_the_shape_reader_counts_modules_and_functions_as_the_rules_say(tmp_path):
    """The reader itself, on made-up files: a module of 601 newlines is over, one of 600 is not; a function of 81
    lines is over (a method too), one of 80 lines under two decorators is not; a known module is let off its length
    but not its functions."""
    files = {
        "p/long.py": "\n" * 601,
        "p/fits.py": "\n" * 600,
        "p/funcs.py": _function("f", 81) + "\n\nclass C:\n" + _function("m", 81, "    "),
        "p/deco.py": "@a\n@b\n" + _function("g", 80),
        "q/known.py": "\n" * 700 + _function("h", 81),
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    found = shape_violations(tmp_path, ("p", "q"), {"q/known.py"})
    assert [f.split(" (")[0] for f in found] == [
        "p/funcs.py:1: function f has 81 lines",
        "p/funcs.py:85: function m has 81 lines",
        "p/long.py: 601 lines",
        "q/known.py:701: function h has 81 lines",
    ]


def test_no_module_over_600_lines_no_function_over_80():
    found = shape_violations(known=LONG_MODULES_KNOWN)
    assert not found, f"{len(found)} modules or functions too long:\n" + "\n".join(found)


def doc_layer_table(text: str) -> dict[int, set[str]]:
    """The module prefixes each row of a layer table names in its modules column (``.x`` is ``hnowmodel.x``), by layer;
    the rest of a cell (what a package holds, in parentheses) is prose, never a backticked name of a module.

    >>> table = doc_layer_table("| L0 | `hnowmodel.errors`, `.io` | leaves: `FRAMING` |\\n| — | `calibrate` | MPI |")
    >>> list(table), sorted(table[0])
    ([0], ['hnowmodel.errors', 'hnowmodel.io'])
    """
    table: dict[int, set[str]] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and re.fullmatch(r"L\d+", cells[0]):
            names = re.findall(r"`([^`]+)`", cells[1])
            table[int(cells[0][1:])] = {"hnowmodel" + n if n.startswith(".") else n for n in names}
    return table


def test_the_layer_table_of_the_docs_is_layers():
    """docs/architecture.md's layer table names exactly the prefixes of :data:`LAYERS`, each in the row of its layer
    (and the facade ``hnowmodel`` in L7's): the table is the code's, not a copy left behind by a refactor."""
    want: dict[int, set[str]] = {FACADE_LAYER: {FACADE}}
    for prefix, layer in LAYERS.items():
        want.setdefault(layer, set()).add(prefix)
    got = doc_layer_table((ROOT / "docs" / "architecture.md").read_text())
    wrong = {
        f"L{layer}": {
            "docs only": sorted(got.get(layer, set()) - want.get(layer, set())),
            "LAYERS only": sorted(want.get(layer, set()) - got.get(layer, set())),
        }
        for layer in sorted(set(got) | set(want))
        if got.get(layer) != want.get(layer)
    }
    assert not wrong, f"docs/architecture.md's layer table and LAYERS differ: {wrong}"
