"""How a collective's data moves over a tree edge: the one fact of an operation that the model engines read.

An operation (:mod:`hnowmodel.ops`) names its :class:`Movement`; the predictors (:mod:`hnowmodel.closedform`,
:mod:`hnowmodel.flow`) and the searches (:mod:`hnowmodel.search`) branch on the movement's properties, never on
the operation's name.

>>> import numpy as np
>>> from hnowmodel.trees import chain
>>> SUBTREE_DOWN.edge_bytes(chain(3), 100.0).tolist()
[300.0, 200.0, 100.0]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError
from .trees import Tree

__all__ = ["Movement", "EDGE_DATA", "ONE_DOWN", "SUBTREE_DOWN", "SUBTREE_UP"]

#: What the edge into a rank carries: ``one`` (every edge the m-byte message) or ``subtree`` (the rank's subtree's
#: blocks, ``subtree_size · m`` bytes).
EDGE_DATA = ("one", "subtree")


@dataclass(frozen=True)
class Movement:
    """``edge_data`` (:data:`EDGE_DATA`) and the direction: ``toward_root`` (a rank sends its data to its parent:
    gather) or away from it (a parent sends to its children: bcast, scatter)."""

    edge_data: str
    toward_root: bool = False

    def __post_init__(self) -> None:
        if self.edge_data not in EDGE_DATA:
            raise InputError(f"unknown edge data {self.edge_data!r} (choose from: {', '.join(EDGE_DATA)})")

    @property
    def label(self) -> str:
        """A few words for messages: ``one message down``, ``subtree blocks up``, ...

        >>> SUBTREE_UP.label
        'subtree blocks up'
        """
        what = "one message" if self.one_message else "subtree blocks"
        return f"{what} {'up' if self.toward_root else 'down'}"

    @property
    def one_message(self) -> bool:
        """Every edge carries the one m-byte message (so every edge is in the regime of m itself)."""
        return self.edge_data == "one"

    def edge_bytes(self, tree: Tree, m: float) -> np.ndarray:
        """Bytes on the edge into each rank (the root's entry: what it would carry) for ``m``-byte blocks."""
        if self.one_message:
            return np.full(tree.n, float(m))
        return tree.subtree_size.astype(float) * m


#: bcast: one message down every edge.
ONE_DOWN = Movement("one")
#: scatter: each rank's subtree's blocks down the edge into it.
SUBTREE_DOWN = Movement("subtree")
#: gather: each rank's subtree's blocks up the edge to its parent.
SUBTREE_UP = Movement("subtree", toward_root=True)
