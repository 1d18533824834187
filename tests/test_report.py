"""The table under a gallery figure: its rows, its verdicts, and its HTML."""

import pytest
import torch
from records import X, sample

from kernels.figures import report
from kernels.figures.report import results_table
from kernels.harness import measurements
from kernels.harness.bench import CheckResult, placeholder
from kernels.operations import vector_add
from kernels.text import messages


def test_rows_are_the_large_sizes_with_their_share_and_ratio() -> None:
    table = results_table(sample(), min_work=12.0 * 2**26)
    assert [row[0] for row in table.rows] == [f"{x:,}" for x in X[2:]]
    # 3600 / 3500 = 1.0286: shown rounded down, as every share and ratio is.
    assert table.rows[0][2:6] == ["3,600", "90.0%", "PyTorch", "1.02x"]
    assert table.caption[0] == "Sizes where one call moves at least 805 MB:"
    assert table.header[2] == "Triton GB/s"


def test_each_goal_gets_a_column_and_a_verdict_in_words() -> None:
    series = {"Triton": [3600.0, 3600.0, 3000.0, 3600.0, 3600.0],
              "PyTorch": [3500.0] * 5, "torch.compile": [3400.0] * 5}  # fmt: skip
    table = results_table(sample(series=series), min_work=0, ceiling_goal=0.85)
    assert table.header[-1] == "goal 85%"
    assert [row[-1] for row in table.rows] == ["met", "met", "MISSED", "met", "met"]
    assert table.notes == [
        "Ceiling goal (85%): met at N = 16,777,216, 33,554,432, 134,217,728 and "
        "268,435,456; missed at 67,108,864."
    ]
    assert table.caption[0] == "Every measured size:"
    assert table.caption[2] == (
        "Goal: at least 85% of the ceiling; each goal column says met or MISSED in this run."
    )
    both = results_table(sample(), min_work=0, ceiling_goal=0.85, baseline_goal=1.0)
    assert both.caption[2].startswith(
        "Goals: at least 85% of the ceiling and at least 1.00x the faster baseline's rate;"
    )


def test_a_small_threshold_is_not_printed_as_zero() -> None:
    table = results_table(sample(metric="TFLOP/s"), min_work=0.5e9)
    assert table.caption[0] == "Sizes where one call needs at least 0.5 GFLOP:"


def test_text_and_html_show_the_same_cells() -> None:
    table = results_table(sample(), min_work=0, baseline_goal=1.0)
    lines, page = str(table).splitlines(), table._repr_html_()
    body = lines[len(table.caption) : len(table.caption) + 1 + len(table.rows)]
    for line, row in zip(body, [table.header, *table.rows], strict=True):
        assert line.split() == " ".join(row).split()
        for cell in row:
            assert f">{cell}<" in page
    assert lines[-len(table.notes) :] == table.notes
    assert page.count("<tr>") == len(table.rows) + 1


def test_html_escapes_names_from_the_record() -> None:
    series = {"Triton": [3600.0] * 5, "<script>x</script>": [3500.0] * 5}
    table = results_table(sample(series=series, call_series=series), min_work=0)
    page = table._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page


def test_a_placeholder_has_no_table() -> None:
    table = results_table(placeholder(vector_add.BENCHMARK, "no record"))
    assert table.rows == [] and "not measured yet" in str(table)
    assert "<table>" not in table._repr_html_()


def test_against_one_baseline_its_name_heads_the_ratio() -> None:
    table = results_table(sample(), min_work=0, against="PyTorch", baseline_goal=1.0)
    assert table.header[-2:] == ["Triton vs PyTorch", "goal 1.00x"]
    assert "faster baseline" not in table.header
    assert table.rows[0][-2:] == ["1.02x", "met"]
    assert table.caption[1].startswith("Triton vs PyTorch: Triton's rate divided by PyTorch's")


def test_a_goal_shown_as_reached_is_reached() -> None:
    # 0.998 of the baseline MISSED a goal of 1.00x: the table must not print 1.00x.
    series = {"Triton": [3493.0] * 5, "PyTorch": [3500.0] * 5, "torch.compile": [3400.0] * 5}
    table = results_table(sample(series=series), min_work=0, baseline_goal=1.0)
    assert table.rows[0][-2:] == ["0.99x", "MISSED"]


def test_a_neighbour_table_sets_each_size_beside_the_aligned_size_one_away() -> None:
    from kernels.figures.report import neighbour_table

    aligned = sample(x=[1024, 2048, 4096], work=[1.0] * 3,
                     series={"Triton": [100.0, 200.0, 300.0], "PyTorch": [100.0, 400.0, None],
                             "torch.compile": [1.0] * 3},
                     call_series={"Triton": [1.0] * 3, "PyTorch": [1.0] * 3,
                                  "torch.compile": [1.0] * 3},
                     unavailable={"PyTorch": "not at 4096"})  # fmt: skip
    ragged = sample(x=[1000, 2047, 4097], work=[1.0] * 3,
                    series={"Triton": [50.0, 150.0, 290.0], "PyTorch": [9.0, 100.0, 50.0],
                            "torch.compile": [1.0] * 3},
                    call_series={"Triton": [1.0] * 3, "PyTorch": [1.0] * 3,
                                 "torch.compile": [1.0] * 3})  # fmt: skip
    table = neighbour_table(ragged, aligned, ("PyTorch", "Triton"))
    # 1000 has no size one away; 4097's PyTorch neighbour was not measured.
    assert table.rows == [
        ["2,047", "2,048", "100", "400", "0.25x", "150", "200", "0.75x"],
        ["4,097", "4,096", "n/a", "n/a", "n/a", "290", "300", "0.96x"],
    ]
    assert table.header[:3] == ["N", "one away", "PyTorch"]
    assert neighbour_table(placeholder(vector_add.BENCHMARK, "no record"), aligned,
                           ("Triton",)).rows == []  # fmt: skip


def test_a_goal_against_three_baselines_names_the_fastest_as_its_column_does() -> None:
    # Before: the goal line said "the faster baseline's rate" where the ratio was to the
    # fastest of three.
    series = {"Triton": [3600.0] * 5, "PyTorch": [3500.0] * 5, "torch.compile": [3400.0] * 5,
              "Liger": [3300.0] * 5}  # fmt: skip
    table = results_table(sample(series=series, call_series=series), min_work=0,
                          baseline_goal=1.0)  # fmt: skip
    assert "fastest baseline" in table.header
    assert table.caption[2].startswith("Goal: at least 1.00x the fastest baseline's rate;")


def test_a_reason_without_a_rate_lists_its_sizes_unambiguously(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    line = ("at N=128,256, 151,936: Liger-Kernel's softmax takes rows of at most 65,536 values; "
            "at N=1,024: another reason; with a semicolon")  # fmt: skip
    assert report.reason_text(line) == (
        "at N = 128,256; 151,936: Liger-Kernel's softmax takes rows of at most 65,536 values; "
        "at N = 1,024: another reason; with a semicolon"
    )
    assert report.reason_text("liger_kernel cannot be imported here") == (
        "liger_kernel cannot be imported here"
    )
    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "ru")
    assert report.reason_text(line).startswith(
        "при N = 128\xa0256; 151\xa0936: softmax из Liger-Kernel принимает строки не длиннее"
    )


def test_every_recorded_reason_has_a_russian_translation() -> None:
    # The reasons are written by the harness and the baselines, in English, into records
    # made on a GPU; the Russian edition shows them translated.
    russian = messages.catalog("ru")
    reasons = [
        (path.name, part)
        for path in sorted(measurements.MEASUREMENTS_ROOT.glob("*/*.json"))
        for line in measurements.read(path).unavailable.values()
        for part in report._NEXT_PART.split(line)
    ]
    assert reasons
    for name, part in reasons:
        match = report._REASON_PART.fullmatch(part)
        why = match["why"] if match else part
        assert why in russian, f"{name}: no Russian for {why!r} (kernels/text/locales/ru.po)"


def test_a_rival_table_judges_one_series_against_the_fastest_other_triton_included() -> None:
    # "Gluon" at each size against whichever other series was fastest there; at the
    # third size it has no rate (left out, and the record's reason is printed).
    series = {"Triton": [500.0, 500.0, 500.0, 700.0, 500.0],
              "Gluon": [600.0, 540.0, None, 600.0, 620.0],
              "SDPA cuDNN": [610.0, 560.0, 600.0, 500.0, 600.0]}  # fmt: skip
    record = sample(series=series, call_series=series, metric="TFLOP/s",
                    unavailable={"Gluon": "at N=67,108,864: a reason"})  # fmt: skip
    table = report.rival_table(record, "Gluon", goal=0.95)
    assert table.header == ["N", "Gluon TFLOP/s", "fastest other", "TFLOP/s", "Gluon vs it",
                            "goal 0.95x"]  # fmt: skip
    assert [row[2:] for row in table.rows] == [
        ["SDPA cuDNN", "610", "0.98x", "met"],  # 600 / 610 = 0.9836
        ["SDPA cuDNN", "560", "0.96x", "met"],
        ["Triton", "700", "0.85x", "MISSED"],
        ["SDPA cuDNN", "600", "1.03x", "met"],
    ]
    assert table.notes[0] == ("Goal (0.95x): met at N = 16,777,216, 33,554,432 and "
                              "268,435,456; missed at 134,217,728.")  # fmt: skip
    assert table.notes[1] == "No Gluon rate at N = 67,108,864: a reason."


def test_a_rival_table_of_a_draft_says_there_is_none() -> None:
    table = report.rival_table(placeholder(vector_add.BENCHMARK, "no record"), "Triton", 1.0)
    assert table.rows == [] and "not measured yet" in table.caption[0]


def test_an_ablation_table_gives_each_series_as_a_share_of_the_kernel() -> None:
    # Each other series divided by Triton's rate, rounded down; a missing rate is n/a,
    # and the record's reason for it follows the table.
    series = {"Triton": [500.0, 400.0, 600.0, 500.0, 500.0],
              "no block skipping": [250.0, 399.0, None, 500.0, 100.0],
              "SDPA cuDNN": [550.0, 400.0, 600.0, 400.0, 500.0]}  # fmt: skip
    record = sample(series=series, call_series=series, metric="TFLOP/s",
                    unavailable={"no block skipping": "at N=67,108,864: a reason"})  # fmt: skip
    table = report.ablation_table(record)
    assert table.header[0] == "series" and len(table.header) == 6
    assert table.rows == [
        ["no block skipping", "0.50x", "0.99x", "n/a", "1.00x", "0.20x"],
        ["SDPA cuDNN", "1.10x", "1.00x", "1.00x", "0.80x", "1.00x"],
    ]
    assert table.notes == ["No no block skipping rate at N = 67,108,864: a reason."]
    assert report.ablation_table(placeholder(vector_add.BENCHMARK, "no")).rows == []


def test_a_russian_table_names_its_metric_and_size_in_russian(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Before: "Triton GB/s" and an attention table's "sequence length" headed the
    # Russian edition's tables, in English.
    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "ru")
    table = results_table(sample(), min_work=0, baseline_goal=1.0)
    assert table.header[:3] == ["N", "МБ/вызов", "Triton, ГБ/с"]  # noqa: RUF001
    assert messages.translated("sequence length") == "длина последовательности"
    assert messages.translated("TFLOP/s") == "TFLOP/s"
    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "en")
    assert results_table(sample(), min_work=0).header[:3] == ["N", "MB/call", "Triton GB/s"]


def test_the_peak_memory_table_is_written_in_the_edition_s_words_and_numbers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: the Russian attention and cross-entropy pages printed this table in
    # English ("sequence length", "1,024", "34,360 MB").
    record = sample(
        x_name="sequence length", peak_memory_mb={"Triton": [1.0, 10.0, 100.0, 34360.0, None],
                                                  "naive": [2.0, 20.0, 200.0, 2000.0, 4000.0]},
    )  # fmt: skip
    report.print_peak_memory(record)
    english = capsys.readouterr().out
    assert "sequence length" in english and "34,360 MB" in english and "naive" in english
    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "ru")
    report.print_peak_memory(record)
    russian = capsys.readouterr().out
    assert "длина последовательности" in russian and "наивное" in russian
    assert "34\u00a0360 МБ" in russian and "MB" not in russian and "34,360" not in russian


def test_a_check_line_names_its_size_in_the_edition_s_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Before: the Russian attention page's check lines read "sequence length = 1 024".
    result = CheckResult("attention", "Triton", "sequence length", 1024, torch.bfloat16, 1e-3, 1e-2)
    assert "sequence length = 1,024" in str(result)
    monkeypatch.setenv(messages.LANGUAGE_VARIABLE, "ru")
    assert "длина последовательности = 1\u00a0024" in str(result)
