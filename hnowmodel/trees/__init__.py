"""Communication trees: one representation, validated, with constructors by family and interop.

A :class:`Tree` over ranks ``0..n-1`` is a parent array (``-1`` at the root) plus each rank's 1-based position in
its parent's send order (``childrank``, 0 at the root). ``children`` lists each rank's children in send order.
All per-rank data are numpy arrays, so trees of 2**20 ranks are cheap to build and to predict over.

The package, by idea:

* :mod:`.tree` - the :class:`Tree` type, its readers and writers (:func:`from_parent`, :func:`from_children`,
  :func:`from_dict`, :func:`load_tree`, :func:`from_networkx`), :func:`subtree_preorder`;
* :mod:`.generic` - :func:`binomial` (MPICH's), :func:`sequential`, :func:`chain`, :func:`kary`, :func:`knomial`;
* :mod:`.mpich` - MPICH's ``MPIR_Bcast_intra_tree`` shapes (:func:`mpich_knomial1`, :func:`mpich_knomial2`);
* :mod:`.ompi` - Open MPI's ``coll_base_topo.c`` builders (``ompi_*``);
* :mod:`.hierarchical` - trees for a layout's node types (:func:`hierarchical`, :func:`type_speed_order`);
* :mod:`.hosts` - trees for a layout's hosts (:func:`two_level`: a tree over the hosts, then one inside each;
  named ``hosts[:INTER[/INTRA]]`` and ``mpich-smp[:INTER[/INTRA]]``);
* :mod:`.registry` - trees by name (:data:`TREES`, :func:`make_tree`, :func:`tree_names`).

>>> t = binomial(8)
>>> t.children[0], t.children[4]
((4, 2, 1), (6, 5))
>>> t.parent.tolist()
[-1, 0, 0, 2, 0, 4, 4, 6]
"""

from __future__ import annotations

from .generic import binomial, chain, kary, knomial, sequential
from .hierarchical import hierarchical, type_speed_order
from .mpich import mpich_knomial1, mpich_knomial2
from .nodeaware import HEADS, host_heads, host_members, two_level
from .ompi import ompi_binomial, ompi_chain, ompi_in_order_binomial, ompi_in_order_bintree, ompi_linear, ompi_tree
from .registry import TREES, TreeFactory, make_tree, tree_names
from .tree import Tree, from_children, from_dict, from_file, from_networkx, from_parent, load_tree, subtree_preorder

__all__ = [
    "Tree",
    "from_parent",
    "from_children",
    "from_dict",
    "load_tree",
    "from_file",
    "from_networkx",
    "binomial",
    "sequential",
    "chain",
    "kary",
    "knomial",
    "mpich_knomial1",
    "mpich_knomial2",
    "ompi_binomial",
    "ompi_in_order_binomial",
    "ompi_tree",
    "ompi_chain",
    "ompi_linear",
    "ompi_in_order_bintree",
    "hierarchical",
    "type_speed_order",
    "two_level",
    "host_members",
    "host_heads",
    "HEADS",
    "TREES",
    "TreeFactory",
    "make_tree",
    "tree_names",
    "subtree_preorder",
]
