"""read_csv_strict with dtype=str and a non-numeric cell in a numeric column: the clear DatasetError naming
file, line and column (it used to be an UnboundLocalError: the float fast path's frame was undefined)."""
import pytest

from fairmiss.datasets.csvcheck import read_csv_strict
from fairmiss.datasets.registry import DatasetError


def test_bad_numeric_cell_with_dtype_str_names_file_line_column(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("a,b,c\n1,2,x\n3,oops,y\n")
    with pytest.raises(DatasetError, match=r"x.csv: line 3, column 'b': non-numeric value 'oops'"):
        read_csv_strict(p, required=["a", "b", "c"], numeric=["a", "b"], dtype=str)


def test_good_file_with_dtype_str_parses_numbers(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("a,b,c\n1,2.5,x\n3,4,y\n")
    df = read_csv_strict(p, required=["a", "b", "c"], numeric=["a", "b"], dtype=str)
    assert df["a"].tolist() == [1.0, 3.0] and df["b"].tolist() == [2.5, 4.0] and df["c"].tolist() == ["x", "y"]
