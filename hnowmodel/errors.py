"""One exception hierarchy for everything the user can get wrong.

Every message names the bad value or field, so that the CLI can print it as its one line.

>>> try:
...     raise ProfileError("types.fast.Sc_us: must be >= 0, got -1")
... except HnowError as e:
...     print(e)
types.fast.Sc_us: must be >= 0, got -1
"""

__all__ = ["HnowError", "ProfileError", "LayoutError", "TreeError", "InputError", "MPIRunError"]


class HnowError(ValueError):
    """Base class: bad input or a failed run; the CLI turns it into exit status 2 and one line."""


class ProfileError(HnowError):
    """A profile or testbed document is malformed, has the wrong schema, or a bad parameter."""


class LayoutError(HnowError):
    """A layout names an unknown type, or its length does not fit the tree."""


class TreeError(HnowError):
    """A tree is invalid (not rooted, ranks missing or repeated, cycles) or its name is unknown."""


class InputError(HnowError):
    """Any other bad argument: negative size, unknown op, bad flag value."""


class MPIRunError(HnowError):
    """An MPI job failed, hung past its timeout, or returned no result."""
