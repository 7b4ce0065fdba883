"""Tree specs, parsed and resolved in one place: what ``--tree``/``--trees`` and the library's ``tree=`` accept.

A spec is one of

* a tree family of :data:`hnowmodel.trees.TREES` (``binomial``, ``kary:3``, ``hierarchical``), built by
  :func:`hnowmodel.trees.make_tree`; ``hosts:INTER/INTRA`` is a two-level tree for the layout's hosts (a tree of
  family INTER over the hosts, each headed by its lowest rank and the root's by the root, then a tree of family
  INTRA inside each host; either part may be left out: binomial), ``mpich-smp:INTER/INTRA`` the same with the root
  first sending to its host's leader (MPICH's ``smp`` bcast); with one rank per host both are the INTER tree;
* ``@file.json``: a tree file (as ``hnow best-tree -o`` writes it);
* ``optimal[:OP][:SIZE]``: the best tree :func:`hnowmodel.search.best_tree` finds for operation OP at SIZE bytes,
  and ``fnf[:SIZE]``: the Fastest-Node-First broadcast tree at SIZE (:func:`hnowmodel.search.fnf`). A bare
  ``optimal`` or ``fnf`` is chosen per row, for the operation and size of the measurement it runs in
  (:func:`resolve_all`) or of the prediction (:func:`hnowmodel.predict`, ``hnow predict``: at each size), or for
  bcast at 0 bytes where there is no row (:func:`build_trees`);
  ``optimal:OP`` is chosen at 0 bytes, ``optimal:SIZE`` for bcast: fixed choices;
* ``native`` or ``native:ALGO``: the MPI library's own collective (:mod:`hnowmodel.ops`); it resolves to None (its
  model tree is :attr:`hnowmodel.libraries.native.NativeAlgorithm.model_tree`).

This module sits above :mod:`hnowmodel.search` (it imports trees, ops and search; nothing below imports it).

>>> parse_spec("optimal:scatter:4K")
TreeSpec(text='optimal:scatter:4K', kind='chosen', method='optimal', op='scatter', size=4096)
>>> parse_spec("optimal").per_row, parse_spec("optimal:gather").per_row, parse_spec("fnf:1K").per_row
(True, False, False)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import ops as _ops
from . import search as _search
from .errors import InputError, TreeError
from .params import Profile
from .sizes import parse_size
from .trees import TREES, Tree, make_tree, tree_names

__all__ = [
    "TreeSpec",
    "TreeSet",
    "CHOSEN",
    "spec_names",
    "parse_spec",
    "spec_list",
    "spec_items",
    "native_names",
    "resolve",
    "resolve_all",
    "build_trees",
]

#: The specs whose tree the model chooses for the profile and the layout.
CHOSEN = ("optimal", "fnf")


@dataclass(frozen=True)
class TreeSpec:
    """One parsed spec: ``kind`` is ``family``, ``file``, ``chosen`` (``method`` optimal/fnf, chosen for ``op`` at
    ``size`` bytes; None: the row's own) or ``native``."""

    text: str
    kind: str
    method: str | None = None
    op: str | None = None
    size: int | None = None

    @property
    def per_row(self) -> bool:
        """Whether the tree depends on the row it runs in (a chosen tree that names no operation and no size)."""
        return self.kind == "chosen" and self.op is None and self.size is None

    def chosen_for(self, size: int | None = None) -> int | None:
        """The size (bytes) a chosen tree is chosen at for a row of ``size`` bytes; None for other trees."""
        if self.kind != "chosen":
            return None
        return size if self.per_row else self.size


def spec_names() -> list[str]:
    """Every form a tree spec takes, as the help and the errors list them.

    >>> spec_names()[-5:]
    ['fnf[:SIZE]', 'optimal[:OP][:SIZE]', 'native', 'native:ALGO', '@file.json']
    """
    families = [name for name in tree_names() if not name.startswith("@")]
    return [*families, "fnf[:SIZE]", "optimal[:OP][:SIZE]", _ops.NATIVE, "native:ALGO", "@file.json"]


def parse_spec(text: str) -> TreeSpec:
    """Classify one spec (errors about a family's argument and about files come when it is resolved, with the
    tree's size known); :class:`TreeError` names an unknown family and the valid forms."""
    text = str(text).strip()
    if text.startswith("@"):
        return TreeSpec(text, "file")
    if _ops.native_name(text) is not None:
        return TreeSpec(text, "native")
    method, _, arg = text.partition(":")
    if method not in CHOSEN:
        if method not in TREES:
            raise TreeError(f"unknown tree {text!r} (choose from: {', '.join(spec_names())})")
        return TreeSpec(text, "family")
    op, size = None, None
    for part in arg.split(":") if arg else []:
        if method == "optimal" and op is None and part in _ops.tree_names():  # the operations trees run
            op = part
            continue
        try:
            size = parse_size(part, f"tree {method}:SIZE")
        except InputError:
            ops = ", ".join(_ops.tree_names())
            need = f"[OP:]SIZE needs an operation ({ops}) and/or" if method == "optimal" else "SIZE needs"
            raise TreeError(f"tree {method}:{need} a size in bytes, got {arg!r}") from None
    if op is not None and size is None:
        size = 0  # optimal:OP: chosen at 0 bytes
    return TreeSpec(text, "chosen", method, op, size)


def _split(text: Any) -> list[str]:
    """The specs of one comma list (no spec has a comma), stripped, empty ones dropped."""
    return [s.strip() for s in str(text or "").split(",") if s.strip()]


def spec_list(trees: Any, flag: str = "--tree") -> list[str]:
    """Tree specs as text: a comma list (or a sequence of comma lists) -> one spec per item, in order; the one place
    spec lists are split. :class:`InputError` naming ``flag`` when there is none.

    >>> spec_list(["binomial, native", "kary:3"])
    ['binomial', 'native', 'kary:3']
    """
    items = [trees] if trees is None or isinstance(trees, str) else list(trees)
    names = [s for t in items for s in _split(t)]
    if not names:
        raise InputError(f"{flag}: give at least one tree name, @file.json, or 'native'")
    return names


def spec_items(trees: Any, flag: str = "--tree") -> list[tuple[str, TreeSpec | Tree]]:
    """Specs as given (a name, a comma list, a :class:`Tree`, a list of these, or ``{name: Tree}``) ->
    ``[(name, TreeSpec or Tree)]`` in order; :class:`InputError` naming ``flag`` when there is none."""
    if isinstance(trees, (str, Tree)):
        trees = [trees]
    items: list[tuple[str, TreeSpec | Tree]] = []
    if isinstance(trees, Mapping):
        for name, given in trees.items():
            items.append((name, given if given is not None else parse_spec(name)))
    else:
        for t in trees:
            if isinstance(t, Tree):
                items.append((t.name or f"tree{len(items)}", t))
            else:
                items += [(s, parse_spec(s)) for s in _split(t)]
    if not items:
        raise InputError(f"{flag}: give at least one tree name, @file.json, or 'native'")
    return items


def native_names(items: Sequence[tuple[str, TreeSpec | Tree]]) -> list[str]:
    """The names of ``items`` (:func:`spec_items`) that are the MPI library's own collective (``native[:ALGO]``)."""
    return [name for name, spec in items if isinstance(spec, TreeSpec) and spec.kind == "native"]


def resolve(
    spec: TreeSpec | Tree,
    n: int,
    *,
    root: int = 0,
    layout: Sequence[str] | None = None,
    profile: Profile | None = None,
    op: str | None = None,
    size: int | None = None,
    variant: str | None = None,
) -> Tree | None:
    """The tree of ``spec`` on ``n`` ranks rooted at ``root`` (None for ``native``): a chosen tree is chosen for
    the spec's operation and size, else the row's ``op`` and ``size`` (default bcast, 0 bytes), under ``variant``.
    :class:`TreeError` when it does not have ``n`` ranks and root ``root``."""
    if isinstance(spec, Tree):
        tree = spec
    elif spec.kind == "native":
        return None
    elif spec.kind == "chosen":
        tree = _chosen(spec, n, root, layout, profile, spec.op or op or "bcast", spec.chosen_for(size) or 0, variant)
    else:
        try:
            tree = make_tree(spec.text, n, root=root, layout=layout, profile=profile)  # a Layout keeps its hosts
        except TreeError as e:
            if profile is None and "needs a layout and a profile" in str(e):
                raise TreeError(f"{e} (pass --profile and --layout)") from None
            raise
    if tree.n != n:
        raise TreeError(f"tree {_name(spec)!r} has {tree.n} ranks but the job has {n}")
    if tree.root != root:
        raise TreeError(f"tree {_name(spec)!r} has root {tree.root} but --root is {root}")
    return tree


def _name(spec: TreeSpec | Tree) -> str:
    return spec.text if isinstance(spec, TreeSpec) else spec.name


def _chosen(
    spec: TreeSpec,
    n: int,
    root: int,
    layout: Sequence[str] | None,
    profile: Profile | None,
    op: str,
    size: int,
    variant: str | None,
) -> Tree:
    if layout is None or profile is None:
        raise TreeError(
            f"tree {spec.method!r} needs a layout and a profile (it is chosen for the node types) "
            "(pass --profile and --layout)"
        )
    if len(layout) != n:
        raise TreeError(f"tree {spec.method!r}: layout has {len(layout)} ranks, expected {n}")
    if spec.method == "fnf":
        return _search.fnf(profile, layout, float(size), root)
    return _search.best_tree(profile, layout, op=op, size=size, root=root, compare=(), variant=variant).tree


@dataclass(frozen=True)
class TreeSet:
    """The trees of a job: ``fixed`` maps a name to its tree (None: ``native``), ``rows`` maps ``(name, op,
    size)`` to the tree of a spec chosen per row (bare ``optimal``/``fnf``), ``specs`` the parsed spec of each
    name (None for a :class:`Tree` given as is). ``names`` keeps the order given."""

    names: tuple[str, ...]
    fixed: Mapping[str, Tree | None]
    rows: Mapping[tuple[str, str, int], Tree] = field(default_factory=dict)
    specs: Mapping[str, TreeSpec | None] = field(default_factory=dict)

    @classmethod
    def of(cls, built: Mapping[str, Tree | None]) -> TreeSet:
        """A set of trees fixed by name (``{name: Tree or None}``)."""
        return cls(tuple(built), dict(built), {}, {k: parse_spec(k) for k in built})

    def tree(self, name: str, op: str, size: int) -> Tree | None:
        """The tree that runs ``name`` for ``op`` at ``size`` bytes (None: the library's own collective)."""
        return self.rows[(name, op, size)] if name in self.per_row_names else self.fixed.get(name)

    @property
    def per_row_names(self) -> tuple[str, ...]:
        return tuple(n for n in self.names if n not in self.fixed)

    def chosen_for(self, name: str, size: int) -> int | None:
        """The size (bytes) the tree ``name`` of a row of ``size`` bytes was chosen at; None when not chosen."""
        spec = self.specs.get(name)
        return None if spec is None else spec.chosen_for(size)


def resolve_all(
    items: Sequence[tuple[str, TreeSpec | Tree]],
    n: int,
    *,
    root: int = 0,
    layout: Sequence[str] | None = None,
    profile: Profile | None = None,
    variants: Mapping[str, str] | None = None,
    rows: Sequence[tuple[str, int]] = (),
) -> TreeSet:
    """Every spec of ``items`` resolved once: fixed ones by name, per-row ones for each ``(op, size)`` of ``rows``
    (under ``variants[op]``)."""
    fixed: dict[str, Tree | None] = {}
    per_row: dict[tuple[str, str, int], Tree] = {}
    for name, spec in items:
        if isinstance(spec, TreeSpec) and spec.per_row:
            for op, size in rows:
                v = (variants or {}).get(op)
                tree = resolve(spec, n, root=root, layout=layout, profile=profile, op=op, size=size, variant=v)
                per_row[(name, op, size)] = tree  # type: ignore[assignment]
            continue
        op = spec.op if isinstance(spec, TreeSpec) else None
        v = (variants or {}).get(op) if op is not None else None
        fixed[name] = resolve(spec, n, root=root, layout=layout, profile=profile, variant=v)
    specs = {name: spec if isinstance(spec, TreeSpec) else None for name, spec in items}
    return TreeSet(tuple(name for name, _ in items), fixed, per_row, specs)


def build_trees(
    trees: Any,
    n: int,
    *,
    root: int = 0,
    layout: Sequence[str] | None = None,
    profile: Profile | None = None,
    variants: Mapping[str, str] | None = None,
    ops: Sequence[str] | None = None,
) -> dict[str, Tree | None]:
    """Tree specs -> ``{name: Tree}`` (``native`` and ``native:ALGO`` -> None; checked against ``ops``), each
    resolved once by name (a chosen tree that names no operation or size: bcast, 0 bytes). Specs: see the module
    docstring, or :class:`Tree` objects."""
    out: dict[str, Tree | None] = {}
    for name, spec in spec_items(trees):
        if isinstance(spec, TreeSpec) and spec.kind == "native":
            _ops.check_native(name, ops)
        op = spec.op if isinstance(spec, TreeSpec) else None
        v = (variants or {}).get(op) if op is not None else None
        out[name] = resolve(spec, n, root=root, layout=layout, profile=profile, variant=v)
    return out
