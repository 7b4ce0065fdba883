"""The MPI libraries' registry (hnowmodel.libraries.LIBRARIES): each library's package is the one place its
algorithms are defined, the operation registry and the export read them from there, and a library is added by one
package and one entry."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from hnowmodel import libraries, ops
from hnowmodel.export import FORMATS, LIBRARY_FORMATS
from hnowmodel.export.files import FILE_NAMES
from hnowmodel.libraries import LIBRARIES, Library, NativeAlgorithm, OpAlgorithms


@pytest.mark.parametrize("op", ops.names())
def test_the_operation_registry_holds_each_librarys_own_algorithms(op):
    """``Operation.native``/``alternatives``/``pinned_only`` are the libraries' ``ALGORITHMS`` entries, object for
    object, in registry order."""
    o = ops.get(op)
    for name, lib in LIBRARIES.items():
        got = lib.algorithms.get(op, OpAlgorithms())
        assert o.native.get(name) is got.native
        assert o.alternatives.get(name, ()) == got.alternatives
        assert o.pinned_only.get(name, ()) == got.pinned_only
        assert ops.native_choices(op, name) == got.choices
    assert list(o.native) == [n for n in LIBRARIES if n in o.native]


def test_each_library_exports_its_own_format_in_registry_order():
    assert [f.library for f in LIBRARY_FORMATS.values()] == list(LIBRARIES)
    for lib in LIBRARIES.values():
        fmt = next(f for f in LIBRARY_FORMATS.values() if f.library == lib.name)
        assert lib.export == f"{lib.package}.export"
        assert FORMATS[fmt.format] == fmt.file_name and FILE_NAMES[fmt.env] == fmt.env_file_name


def test_a_library_is_one_registry_entry(monkeypatch):
    """A library added to the registry gives the operation registry its algorithms for the operations it has them
    for, and nothing for the others."""
    mine = NativeAlgorithm("linear", {"MY_MPI_BCAST": "linear"}, "ompi-linear", leaf="bcast=linear")
    toy = Library("My MPI", "hnowmodel.libraries.mympi", MappingProxyType({"bcast": OpAlgorithms(mine)}))
    monkeypatch.setattr(libraries, "LIBRARIES", MappingProxyType({**LIBRARIES, "My MPI": toy}))
    got = libraries.natives("bcast")
    assert list(got["native"]) == ["MPICH", "Open MPI", "Intel MPI", "My MPI"] and got["native"]["My MPI"] is mine
    assert "My MPI" not in got["alternatives"] and "My MPI" not in libraries.natives("gather")["native"]


def test_a_librarys_leaf_is_its_own_file_formats():
    """No shared field per file format: each library's algorithms carry their own file's leaf (MPICH a selection
    JSON leaf, Open MPI a rules-file triple, Intel MPI an I_MPI_ADJUST number), None where its file cannot select
    one (a default, an algorithm pinned by environment only)."""
    kinds = {"MPICH": dict, "Open MPI": tuple, "Intel MPI": int}
    for name, lib in LIBRARIES.items():
        for algos in lib.algorithms.values():
            for nat in (*algos.choices, *algos.pinned_only):
                assert nat.leaf is None or isinstance(nat.leaf, kinds[name]), (name, nat.algorithm)
            assert all(nat.leaf is None for nat in algos.pinned_only), name
