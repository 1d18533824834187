"""Tile maps against an owner computed lane by lane in plain Python, and their bad inputs.

The oracle below knows nothing of the kernels or of the PyTorch references: for each
lane it asks which tile the lane falls in and whether it lies inside the tensor. Both the
kernels' maps and the module's references are checked against it.
"""

import matplotlib.pyplot as plt
import pytest
import torch

from kernels.figures import tile_map
from kernels.figures.plotting import TEXT_PT
from kernels.figures.tile_map import UNTOUCHED, TileMap
from kernels.text import messages


def owner_2d(n_rows: int, n_cols: int, block_rows: int, block_cols: int) -> list[list[int]]:
    """The id of the program owning each lane of a 2-D map, or UNTOUCHED, by counting."""
    tiles_down = -(-n_rows // block_rows)
    tiles_across = -(-n_cols // block_cols)
    owners = []
    for r in range(tiles_down * block_rows):
        line = []
        for c in range(tiles_across * block_cols):
            inside = r < n_rows and c < n_cols
            line.append((r // block_rows) * tiles_across + c // block_cols if inside else UNTOUCHED)
        owners.append(line)
    return owners


def check_map(result: TileMap, owners: list, expected: torch.Tensor) -> None:
    """The kernel's ids and the reference both equal the oracle, and the writes show
    one write per element inside the tensor and none outside."""
    oracle = torch.tensor(owners, dtype=torch.int32)
    ids, writes = result.ids.cpu(), result.writes.cpu()
    assert ids.dtype == writes.dtype == torch.int32
    assert torch.equal(expected, oracle)
    assert torch.equal(ids, oracle)
    assert torch.equal(writes, (oracle != UNTOUCHED).to(torch.int32))


@pytest.mark.parametrize(
    ("n_elements", "block_size"), [(1, 1), (1, 16), (5, 8), (256, 256), (257, 64), (1000, 256)]
)
def test_blocks_map(n_elements: int, block_size: int) -> None:
    owners = owner_2d(1, n_elements, 1, block_size)[0]
    check_map(
        tile_map.map_blocks(n_elements, block_size),
        owners,
        tile_map.expected_blocks(n_elements, block_size),
    )


@pytest.mark.parametrize(
    ("n_rows", "n_cols", "block_size"), [(1, 1, 1), (6, 50, 64), (3, 64, 64), (7, 5, 8)]
)
def test_rows_map(n_rows: int, n_cols: int, block_size: int) -> None:
    # One program per row is a 2-D tiling with tiles one row tall and one tile across.
    check_map(
        tile_map.map_rows(n_rows, n_cols, block_size),
        owner_2d(n_rows, n_cols, 1, block_size),
        tile_map.expected_rows(n_rows, n_cols, block_size),
    )


@pytest.mark.parametrize("column_major", [False, True], ids=["row-major", "column-major"])
@pytest.mark.parametrize(
    ("n_rows", "n_cols", "block_rows", "block_cols"),
    [(1, 1, 1, 1), (50, 70, 16, 32), (32, 64, 16, 32), (17, 3, 16, 4), (5, 100, 2, 64)],
)
def test_tiles_map(
    n_rows: int, n_cols: int, block_rows: int, block_cols: int, column_major: bool
) -> None:
    result = tile_map.map_tiles(n_rows, n_cols, block_rows, block_cols, column_major=column_major)
    check_map(
        result,
        owner_2d(n_rows, n_cols, block_rows, block_cols),
        tile_map.expected_tiles(n_rows, n_cols, block_rows, block_cols),
    )
    # The layout asked for is the one the kernel wrote through.
    height, width = result.ids.shape
    assert result.ids.stride() == ((1, height) if column_major else (width, 1))


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: tile_map.map_blocks(0, 16), ValueError, r"^n_elements must be at least 1"),
        (lambda: tile_map.map_blocks(10, 100), ValueError, r"^block_size must be a power of two"),
        (lambda: tile_map.map_blocks(10.0, 16), TypeError, r"^n_elements must be an int"),
        (lambda: tile_map.map_blocks(10, True), TypeError, r"^block_size must be an int"),
        (lambda: tile_map.map_blocks(2**31, 1024), ValueError, r"int32 offsets"),
        (lambda: tile_map.map_rows(0, 5, 8), ValueError, r"^n_rows must be at least 1"),
        (lambda: tile_map.map_rows(4, 50, 32), ValueError, r"^block_size \(32\) is shorter"),
        (lambda: tile_map.map_tiles(4, 4, 3, 4), ValueError, r"^block_rows must be a power"),
        (lambda: tile_map.map_tiles(4, -1, 4, 4), ValueError, r"^n_cols must be at least 1"),
        (lambda: tile_map.map_tiles(1, 2**17, 1, 1), ValueError, r"^n_cols \(131072\) needs"),
    ],
)
def test_rejects_bad_input(call, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        call()


def test_drawing_labels_the_programs_that_fit_and_keeps_text_large() -> None:
    result = tile_map.map_tiles(50, 70, 16, 32)
    fig = tile_map.draw_tile_map(result.ids, (50, 70), block=(16, 32))
    try:
        labels = {text.get_text() for text in fig.axes[0].texts}
        # Programs 9 to 11 own two rows each: too thin for a label.
        assert labels == {str(pid) for pid in range(9)}
        texts = [t for t in fig.findobj(plt.Text) if t.get_text() and t.get_visible()]
        assert min(t.get_fontsize() for t in texts) >= TEXT_PT
    finally:
        plt.close(fig)


def test_drawing_refuses_a_shape_of_another_rank() -> None:
    result = tile_map.map_blocks(10, 8)
    with pytest.raises(ValueError, match=r"^ids has shape \(16,\) and shape is \(2, 5\)"):
        tile_map.draw_tile_map(result.ids, (2, 5))


def test_a_tile_map_speaks_the_edition_s_language(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "ru")
    result = tile_map.map_tiles(50, 70, 16, 32)
    fig = tile_map.draw_tile_map(result.ids, (50, 70), block=(16, 32))
    try:
        axes = fig.axes[0]
        assert (axes.get_xlabel(), axes.get_ylabel()) == ("столбец", "строка")
        legend = [text.get_text() for text in fig.legends[0].get_texts()]
        assert legend == ["не записано", "граница тензора"]
    finally:
        plt.close(fig)
