"""Trees by name: :data:`TREES` (name -> factory), :func:`make_tree` (``binomial``, ``kary:4``, ``@tree.json``) and
:func:`tree_names` (what :func:`make_tree` accepts, for help texts and error messages).

A factory is called as ``factory(n, root=0, arg=None, layout=None, profile=None)``: ``arg`` is the text after ``:``
in e.g. ``kary:4`` (None without one); ``layout`` and ``profile`` are given to the trees built for node types.

>>> make_tree("kary:3", 7).children[0]
(1, 2, 3)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import TreeError
from .generic import binomial, chain, kary, knomial, sequential
from .hierarchical import hierarchical
from .mpich import mpich_knomial1, mpich_knomial2
from .nodeaware import host_members, two_level
from .ompi import ompi_binomial, ompi_chain, ompi_in_order_binomial, ompi_linear, ompi_tree
from .tree import Tree, load_tree

__all__ = ["TreeFactory", "TREES", "make_tree", "tree_names"]

TreeFactory = Callable[..., Tree]


def _shape(build: Callable[[int, int], Tree]) -> TreeFactory:
    """A factory for a family with no parameter: ``build(n, root)``."""
    return lambda n, root=0, arg=None, layout=None, profile=None: build(n, root)


def _with_k(build: Callable[[int, Any, int], Tree], default: int) -> TreeFactory:
    """A factory for a family with a ``:K`` parameter (``default`` without one): ``build(n, k, root)``."""
    return lambda n, root=0, arg=None, layout=None, profile=None: build(n, default if arg is None else arg, root)


def _sized_hierarchical(n: int, root: int = 0, arg: Any = None, layout: Any = None, profile: Any = None) -> Tree:
    if layout is not None and len(layout) != n:
        raise TreeError(f"tree 'hierarchical': layout has {len(layout)} ranks, expected {n}")
    return hierarchical(layout, profile, root)


def _two_level_factory(family: str, head: str) -> TreeFactory:
    """A factory for ``family[:INTER[/INTRA]]``: :func:`~hnowmodel.trees.nodeaware.two_level` with the named families
    (each ``binomial`` when empty). Without a layout the ranks are taken one per host (the ``INTER`` tree)."""

    def build(n: int, root: int = 0, arg: Any = None, layout: Any = None, profile: Any = None) -> Tree:
        inter, _, intra = str(arg or "").partition("/")
        inter, intra = inter or "binomial", intra or "binomial"
        for part in (inter, intra):
            if part.startswith("@") or part.partition(":")[0] in _TWO_LEVEL:
                raise TreeError(f"tree {family!r}: each level is a tree family, got {part!r}")
        if intra.partition(":")[0] == "hierarchical":  # it groups by node type, and a host has one type
            raise TreeError(f"tree {family!r}: 'hierarchical' can be the inter-host level only (INTER/INTRA)")
        if layout is not None and len(layout) != n:
            raise TreeError(f"tree {family!r}: layout has {len(layout)} ranks, expected {n}")
        lay = layout if layout is not None else [""] * n
        host_types = [lay[int(m[0])] for m in host_members(lay)]

        def level(spec: str, types: Any) -> Callable[[int, int], Tree]:
            return lambda k, r: make_tree(spec, k, r, layout=types, profile=profile)

        return two_level(
            lay,
            level(inter, None if layout is None else host_types),
            level(intra, None),
            root,
            head=head,
            name=f"{family}:{inter}/{intra}",
        )

    return build


#: The two-level families (:mod:`~hnowmodel.trees.nodeaware`) and who heads each host (:data:`~.hosts.HEADS`): ``hosts``
#: (the root heads its host), ``mpich-smp`` (the root first sends to its host's leader, as MPICH's ``smp`` bcast),
#: ``ompi-han`` (the ranks at the root's position on their hosts, as Open MPI's coll/han).
_TWO_LEVEL = {"hosts": "root", "mpich-smp": "leader", "ompi-han": "local"}

#: Name -> factory(n, root, arg, layout, profile), in the order :func:`tree_names` lists them.
TREES: dict[str, TreeFactory] = {
    "binomial": _shape(binomial),
    "sequential": _shape(sequential),
    "chain": _shape(chain),
    "kary": _with_k(kary, 2),
    "knomial": _with_k(knomial, 2),
    "mpich-knomial1": _with_k(mpich_knomial1, 2),
    "mpich-knomial2": _with_k(mpich_knomial2, 2),
    "ompi-binomial": _shape(ompi_binomial),
    "ompi-in-order-binomial": _shape(ompi_in_order_binomial),
    "ompi-tree": _with_k(ompi_tree, 2),
    "ompi-chain": _with_k(ompi_chain, 4),
    "ompi-linear": _shape(ompi_linear),
    "hierarchical": _sized_hierarchical,
    **{family: _two_level_factory(family, head) for family, head in _TWO_LEVEL.items()},
}
#: What follows a name in :func:`tree_names` (its parameter).
_ARGS = {name: ":K" for name in ("kary", "knomial", "mpich-knomial1", "mpich-knomial2", "ompi-tree", "ompi-chain")}
_ARGS.update({family: "[:INTER[/INTRA]]" for family in _TWO_LEVEL})


def tree_names() -> list[str]:
    """Names accepted by :func:`make_tree` (``kary:K``, ``knomial:K``, ``mpich-knomial1:K``, ``mpich-knomial2:K``
    and ``ompi-tree:K`` take a parameter, default 2; ``ompi-chain:K`` default 4, Open MPI's default chain fanout)."""
    return [t + _ARGS.get(t, "") for t in TREES] + ["@file.json"]


def make_tree(
    spec: str, n: int, root: int | None = None, layout: Sequence[str] | None = None, profile: Any = None
) -> Tree:
    """Build a tree by name (``binomial``, ``kary:4``, ...) over ``n`` ranks rooted at ``root`` (default 0), or load
    one from a tree file (``@tree.json``, as :meth:`Tree.to_dict` and ``hnow best-tree -o`` write it: see
    :func:`load_tree`); a file must have ``n`` ranks and, when ``root`` is given, that root. :class:`TreeError`
    names the valid choices or what does not match.

    >>> make_tree("sequential", 3).children[0]
    (1, 2)
    """
    if str(spec).startswith("@"):
        return load_tree(str(spec)[1:], n, root)
    root = 0 if root is None else root
    name, _, arg = str(spec).partition(":")
    if name not in TREES:
        raise TreeError(f"unknown tree {spec!r} (choose from: {', '.join(tree_names())})")
    return TREES[name](n, root=root, arg=arg or None, layout=layout, profile=profile)
