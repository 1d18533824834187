"""Tile maps: which program of a launch touched which element.

Each kernel here writes nothing but its own program id into the elements it owns, and
adds one to a count of writes there, so that a launch leaves behind a picture of how
the grid cut the tensor into tiles. Three ways to cut are shown: blocks of a 1-D
vector, one program per row of a matrix, and 2-D tiles on a 2-D grid.

A map covers every lane the grid launched, not only the tensor: the tensor sits in its
top-left corner, and the lanes past its edges, which the masks switched off, still hold
``UNTOUCHED`` afterwards. That is how the figures show masking: from what the kernel
did, never from what it should have done.
"""

from typing import NamedTuple

import matplotlib.pyplot as plt
import numpy as np
import torch
import triton
import triton.language as tl
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.patheffects import withStroke

from ..text.messages import _
from ..triton_helpers.runtime import kernel_device
from .plotting import FIGURE_SIZE, TEXT_PT, style

# What a lane holds when no program wrote it.
UNTOUCHED = -1
# The kernels compute int32 offsets, which is safe below 2**31 lanes.
MAX_LANES = 2**31 - 1
# CUDA launches at most this many programs along a grid's axes 1 and 2 (2**31 - 1 on axis 0).
MAX_PROGRAMS_AXIS_1 = 65535


class TileMap(NamedTuple):
    """The outcome of one launch: ``ids[i]`` is the id of the program that wrote lane
    ``i`` (or ``UNTOUCHED``), ``writes[i]`` how many programs wrote it."""

    ids: torch.Tensor
    writes: torch.Tensor


@triton.jit
def blocks_kernel(ids_ptr, writes_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # Program pid owns elements [pid * BLOCK_SIZE, (pid + 1) * BLOCK_SIZE).
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(ids_ptr + offsets, pid, mask=mask)
    # One indivisible read-add-write: two programs on one element would both count.
    tl.atomic_add(writes_ptr + offsets, 1, mask=mask)


@triton.jit
def rows_kernel(ids_ptr, writes_ptr, n_cols, row_stride, BLOCK_SIZE: tl.constexpr):
    # One program per row; the row starts row_stride elements after the previous one.
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    offsets = row * row_stride + cols
    mask = cols < n_cols
    tl.store(ids_ptr + offsets, row, mask=mask)
    tl.atomic_add(writes_ptr + offsets, 1, mask=mask)


@triton.jit
def tiles_kernel(
    ids_ptr,
    writes_ptr,
    n_rows,
    n_cols,
    row_stride,
    col_stride,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
):
    # A 2-D grid: axis 0 counts tiles down the rows, axis 1 across the columns.
    pid_row = tl.program_id(axis=0)
    pid_col = tl.program_id(axis=1)
    rows = pid_row * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    cols = pid_col * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
    # A column times a row broadcasts to a (BLOCK_ROWS, BLOCK_COLS) tile of offsets.
    offsets = rows[:, None] * row_stride + cols[None, :] * col_stride
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    # Number the programs row by row of the grid: 0, 1, ... across, then down.
    pid = pid_row * tl.num_programs(axis=1) + pid_col
    tl.store(ids_ptr + offsets, pid, mask=mask)
    tl.atomic_add(writes_ptr + offsets, 1, mask=mask)


def _check_count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return value


def _check_block(name: str, value: object) -> int:
    # tl.arange makes ranges whose length is a power of two only.
    _check_count(name, value)
    if value & (value - 1):
        raise ValueError(
            f"{name} must be a power of two (tl.arange needs one), got {value}"
        )
    return value


def _blank(shape: tuple[int, ...], column_major: bool = False) -> TileMap:
    # A column-major map is the transpose of a row-major one of the transposed shape.
    if column_major:
        return TileMap(*(t.T for t in _blank(shape[::-1])))
    lanes = int(np.prod(shape))
    if lanes > MAX_LANES:
        raise ValueError(
            f"the map would have {lanes} lanes; these kernels use int32 offsets, "
            f"so they take at most {MAX_LANES}"
        )
    device = kernel_device()
    ids = torch.full(shape, UNTOUCHED, dtype=torch.int32, device=device)
    return TileMap(ids, torch.zeros(shape, dtype=torch.int32, device=device))


def map_blocks(n_elements: int, block_size: int) -> TileMap:
    """Launch :func:`blocks_kernel` over a vector of ``n_elements`` in blocks of
    ``block_size`` (a power of two) and return its map, ``cdiv(n_elements, block_size)``
    blocks long: the vector, then the last block's masked-off lanes."""
    n_elements = _check_count("n_elements", n_elements)
    block_size = _check_block("block_size", block_size)
    n_programs = triton.cdiv(n_elements, block_size)
    tile_map = _blank((n_programs * block_size,))
    blocks_kernel[(n_programs,)](*tile_map, n_elements, BLOCK_SIZE=block_size)
    return tile_map


def map_rows(n_rows: int, n_cols: int, block_size: int) -> TileMap:
    """Launch :func:`rows_kernel`, one program per row of an ``n_rows`` x ``n_cols``
    matrix, each covering its row with ``block_size`` lanes (a power of two, at least
    ``n_cols``), and return its ``n_rows`` x ``block_size`` map."""
    n_rows = _check_count("n_rows", n_rows)
    n_cols = _check_count("n_cols", n_cols)
    block_size = _check_block("block_size", block_size)
    if block_size < n_cols:
        raise ValueError(
            f"block_size ({block_size}) is shorter than a row ({n_cols} columns): "
            "one program per row needs block_size >= n_cols"
        )
    tile_map = _blank((n_rows, block_size))
    # The matrix is the first n_cols columns of the map, a slice whose rows are
    # block_size elements apart: the kernel learns that from the stride.
    matrix = tile_map.ids[:, :n_cols]
    rows_kernel[(n_rows,)](*tile_map, n_cols, matrix.stride(0), BLOCK_SIZE=block_size)
    return tile_map


def map_tiles(
    n_rows: int,
    n_cols: int,
    block_rows: int,
    block_cols: int,
    *,
    column_major: bool = False,
) -> TileMap:
    """Launch :func:`tiles_kernel` over an ``n_rows`` x ``n_cols`` matrix in tiles of
    ``block_rows`` x ``block_cols`` (powers of two) on a 2-D grid, and return its map:
    the matrix in the top-left corner of a whole number of tiles.

    With ``column_major`` the map is stored column by column (a transposed tensor): the
    same kernel fills it, reading the layout from the strides it is given.
    """
    n_rows = _check_count("n_rows", n_rows)
    n_cols = _check_count("n_cols", n_cols)
    block_rows = _check_block("block_rows", block_rows)
    block_cols = _check_block("block_cols", block_cols)
    grid = (triton.cdiv(n_rows, block_rows), triton.cdiv(n_cols, block_cols))
    if grid[1] > MAX_PROGRAMS_AXIS_1:
        raise ValueError(
            f"n_cols ({n_cols}) needs {grid[1]} tiles across, and a grid holds at most "
            f"{MAX_PROGRAMS_AXIS_1} programs along axis 1: take a larger block_cols"
        )
    shape = (grid[0] * block_rows, grid[1] * block_cols)
    tile_map = _blank(shape, column_major)
    row_stride, col_stride = tile_map.ids.stride()
    tiles_kernel[grid](
        *tile_map,
        n_rows,
        n_cols,
        row_stride,
        col_stride,
        BLOCK_ROWS=block_rows,
        BLOCK_COLS=block_cols,
    )
    return tile_map


def expected_blocks(n_elements: int, block_size: int) -> torch.Tensor:
    """The PyTorch reference of :func:`map_blocks`'s ids: element ``i`` belongs to
    block ``i // block_size``; the lanes past the vector stay ``UNTOUCHED``."""
    lanes = torch.arange(triton.cdiv(n_elements, block_size) * block_size)
    ids = torch.where(lanes < n_elements, lanes // block_size, UNTOUCHED)
    return ids.to(torch.int32)


def expected_rows(n_rows: int, n_cols: int, block_size: int) -> torch.Tensor:
    """The PyTorch reference of :func:`map_rows`'s ids: each row belongs to the program
    of its index; the lanes past ``n_cols`` stay ``UNTOUCHED``."""
    rows = torch.arange(n_rows)[:, None].expand(n_rows, block_size)
    cols = torch.arange(block_size)[None, :]
    return torch.where(cols < n_cols, rows, UNTOUCHED).to(torch.int32)


def expected_tiles(
    n_rows: int, n_cols: int, block_rows: int, block_cols: int
) -> torch.Tensor:
    """The PyTorch reference of :func:`map_tiles`'s ids: element ``(r, c)`` belongs to
    tile ``(r // block_rows, c // block_cols)``, numbered across the grid's rows."""
    tiles_across = triton.cdiv(n_cols, block_cols)
    rows = torch.arange(triton.cdiv(n_rows, block_rows) * block_rows)[:, None]
    cols = torch.arange(tiles_across * block_cols)[None, :]
    ids = (rows // block_rows) * tiles_across + cols // block_cols
    inside = (rows < n_rows) & (cols < n_cols)
    return torch.where(inside, ids, UNTOUCHED).to(torch.int32)


# One colour per program, 20 distinct ones before they repeat; grey for untouched lanes.
_PROGRAM_COLOURS = [
    plt.get_cmap("tab20")(i) for i in (*range(0, 20, 2), *range(1, 20, 2))
]
_UNTOUCHED_COLOUR = (0.93, 0.93, 0.93, 1.0)
_EDGE_COLOUR = "black"


def _colours(ids: np.ndarray) -> np.ndarray:
    image = np.empty((*ids.shape, 4))
    image[...] = _UNTOUCHED_COLOUR
    for pid in np.unique(ids[ids != UNTOUCHED]):
        image[ids == pid] = _PROGRAM_COLOURS[pid % len(_PROGRAM_COLOURS)]
    return image


def _label_programs(ax: plt.Axes, ids: np.ndarray) -> None:
    # Write each program's id at the middle of its cells, where the id fits in them.
    fig = ax.figure
    fig.canvas.draw()
    box = ax.get_window_extent()
    points_per_col = box.width / ids.shape[1] * 72 / fig.dpi
    points_per_row = box.height / ids.shape[0] * 72 / fig.dpi
    for pid in np.unique(ids[ids != UNTOUCHED]):
        rows, cols = np.nonzero(ids == pid)
        width = (cols.max() - cols.min() + 1) * points_per_col
        height = (rows.max() - rows.min() + 1) * points_per_row
        if width < 0.7 * TEXT_PT * len(str(pid)) + 4 or height < TEXT_PT + 2:
            continue
        centre = ((cols.min() + cols.max() + 1) / 2, (rows.min() + rows.max() + 1) / 2)
        ax.text(
            *centre,
            str(pid),
            ha="center",
            va="center",
            fontsize=TEXT_PT,
            path_effects=[withStroke(linewidth=3, foreground="white")],
        )


def draw_tile_map(
    ids: torch.Tensor, shape: tuple[int, ...], block: tuple[int, ...] | None = None
) -> Figure:
    """Draw a map of program ids as one colour per program, with the id written where it
    fits, lanes no program wrote in light grey and the edge of the tensor, whose
    ``shape`` sits in the map's top-left corner, as a black line. ``block``, if given,
    puts the ticks at the tiles' edges."""
    if ids.dim() not in (1, 2) or len(shape) != ids.dim():
        raise ValueError(
            f"ids has shape {tuple(ids.shape)} and shape is {tuple(shape)}: "
            "draw a 1-D or 2-D map with the shape of the tensor inside it"
        )
    lanes = ids.detach().cpu().numpy()
    if lanes.ndim == 1:
        # A vector is drawn as a strip: one row of lanes.
        lanes, shape = lanes[None, :], (1, *shape)
        block = None if block is None else (1, *block)
        height = 1.9
    else:
        height = 1.6 + min(3.6, max(1.2, 5.4 * lanes.shape[0] / lanes.shape[1]))
    fig, ax = plt.subplots(figsize=(FIGURE_SIZE[0], height), layout="constrained")
    ax.imshow(
        _colours(lanes),
        extent=(0, lanes.shape[1], lanes.shape[0], 0),
        aspect="auto",
        interpolation="nearest",
    )
    ax.add_patch(
        Rectangle(
            (0, 0),
            shape[1],
            shape[0],
            fill=False,
            linewidth=2.5,
            edgecolor=_EDGE_COLOUR,
            clip_on=False,
        )
    )
    ax.set_xlabel(_("element") if ids.dim() == 1 else _("column"))
    if ids.dim() == 1:
        ax.set_yticks([])
    else:
        ax.set_ylabel(_("row"))
        if lanes.shape[0] <= 16:
            # Few rows: number each one at its middle, as an index.
            ax.set_yticks(
                [r + 0.5 for r in range(lanes.shape[0])], range(lanes.shape[0])
            )
    if block is not None:
        if block[0] < lanes.shape[0]:
            ax.set_yticks(range(0, lanes.shape[0] + 1, block[0]))
        ax.set_xticks(range(0, lanes.shape[1] + 1, block[1]))
    legend = [
        Patch(facecolor=_UNTOUCHED_COLOUR, edgecolor="grey", label=_("not written")),
        Line2D(
            [], [], color=_EDGE_COLOUR, linewidth=2.5, label=_("edge of the tensor")
        ),
    ]
    fig.legend(handles=legend, loc="outside lower center", ncols=2, frameon=False)
    style(fig)
    _label_programs(ax, lanes)
    return fig
