"""The caller's output array of a whole-clip run, handed to the backend batch by batch:
:class:`HostOutput`.

``vidmag.magnify`` returns every output frame in one uint8 array. A backend whose render writes host memory
(the opencl one: its output kernel writes through a buffer over host memory) can write each batch straight
into its place in that array, instead of into a batch array that ``magnify`` then copies: on a processor the
copy, and the first touch of the batch arrays' fresh memory, cost about as much as a tap map of the clip.
Backends that cannot write there ignore it, and ``magnify`` copies what they yield.
"""

from __future__ import annotations

import numpy as np

__all__ = ["HostOutput", "checked_into"]


class HostOutput:
    """A uint8 (T, H, W, 3) array filled in order: :meth:`take` hands out the next frames' slots.

    A backend that takes slots must take one for every frame it yields, in order (frame 0 of a stream too),
    write each batch into its slots and yield those views; the caller then finds each frame already in place
    (:meth:`holds`) and copies only the frames that are not.

    Parameters
    ----------
    array : ndarray, optional
        The output array (C-contiguous uint8 (T, H, W, 3)); may be set later through :attr:`array`, before
        the first :meth:`take`.

    Examples
    --------
    >>> import numpy as np
    >>> out = HostOutput(np.zeros((4, 2, 2, 3), np.uint8))
    >>> first = out.take(3)
    >>> first[:] = 7
    >>> out.holds(first[1], 1), out.holds(first[1], 2), out.filled
    (True, False, 3)
    """

    def __init__(self, array: np.ndarray | None = None) -> None:
        self.array = array
        #: frames handed out so far
        self.filled = 0

    def take(self, n: int) -> np.ndarray:
        """The slots of the next ``n`` frames, a C-contiguous view (n, H, W, 3) of the array.

        Raises
        ------
        RuntimeError
            No array set yet, or fewer than ``n`` frames left in it (the backend yields more frames than
            the run has).
        """
        if self.array is None:
            raise RuntimeError("HostOutput.take before its array was set")
        if self.filled + n > len(self.array):
            raise RuntimeError(
                f"the backend wrote frames {self.filled} to {self.filled + n - 1} of an output of "
                f"{len(self.array)} frames"
            )
        view = self.array[self.filled : self.filled + n]
        self.filled += n
        return view

    def holds(self, frame: np.ndarray, index: int) -> bool:
        """Whether ``frame`` (H, W, 3) is the array's frame ``index`` itself (written in place)."""
        slot = self.array[index]
        return (
            frame.__array_interface__["data"][0] == slot.__array_interface__["data"][0]
            and frame.shape == slot.shape
            and frame.strides == slot.strides
        )


def checked_into(into: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``into``, a render's destination, once it is what a render writes: a C-contiguous uint8 array of
    ``shape``.

    Raises
    ------
    ValueError
        It is not (the message names ``into`` and what it is).

    Examples
    --------
    >>> import numpy as np
    >>> checked_into(np.zeros((1, 2, 2, 3), np.uint8), (1, 2, 2, 3)).shape
    (1, 2, 2, 3)
    """
    if into.dtype != np.uint8 or into.shape != tuple(shape) or not into.flags.c_contiguous:
        raise ValueError(
            f"into must be a C-contiguous uint8 array of shape {tuple(shape)}, got {into.dtype} "
            f"{into.shape}{'' if into.flags.c_contiguous else ' (not contiguous)'}"
        )
    return into
