"""Reads a Parquet file written by `mframe export` with readers written by
others, and prints JSON for the export tests to check:

    read_parquet.py rows FILE     every row of the long table, in file order,
                                  read by DuckDB (one JSON array per line)
    read_parquet.py schema FILE   the Arrow schema pyarrow reads (name: type)
    read_parquet.py index FILE    the rows of an attachment index (DuckDB)
    read_parquet.py pivot FILE    the DuckDB, pandas and polars pivots of
                                  docs/export.md (given as JSON on stdin)

Floats that JSON cannot hold are the strings "NaN", "Infinity", "-Infinity".
"""

import json
import math
import sys


def number(x):
    if isinstance(x, float) and not math.isfinite(x):
        return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    return x


def rows(path):
    import duckdb

    con = duckdb.connect()
    query = (
        "SELECT epoch_ms(time), source, target, message_type, message_id, counter, "
        "device, param, type, value_i64, value_f64, value_str, value_bool "
        "FROM read_parquet(?)"
    )
    for row in con.execute(query, [path]).fetchall():
        print(json.dumps([number(x) for x in row]))


def schema(path):
    import pyarrow.parquet as pq

    f = pq.ParquetFile(path)
    s = f.schema_arrow
    meta = {k.decode(): v.decode() for k, v in f.metadata.metadata.items() if k != b"ARROW:schema"}
    print(json.dumps({"fields": {f.name: [str(f.type), f.nullable] for f in s}, "metadata": meta}))
    print(json.dumps({"row_groups": f.num_row_groups}))


def index(path):
    import duckdb

    con = duckdb.connect()
    query = "SELECT epoch_ms(time), source, counter, name, bytes, path FROM read_parquet(?)"
    for row in con.execute(query, [path]).fetchall():
        print(json.dumps(list(row)))


def pivot(path, snippets):
    """Runs the docs' one-liners (Python source that leaves the wide table in
    `wide`; `rec.parquet` stands for the file) and prints, per one-liner,
    its rows as [time in ms, source, {column: value}], missing cells left
    out."""
    import pandas as pd

    results = {}
    for name, code in snippets.items():
        scope = {}
        exec(code.replace("rec.parquet", path), scope)
        wide = scope["wide"]
        if hasattr(wide, "to_pandas"):  # polars
            wide = wide.to_pandas()
        if "time" not in wide.columns:  # pandas' pivot_table: an index
            wide = wide.reset_index()
        rows = []
        for record in wide.to_dict("records"):
            time = pd.Timestamp(record.pop("time"))
            source = int(record.pop("source"))
            cells = {str(k): float(v) for k, v in record.items() if v is not None and v == v}
            rows.append([time.value // 10**6, source, cells])
        results[name] = rows
    print(json.dumps(results))


if __name__ == "__main__":
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "rows":
        rows(path)
    elif mode == "schema":
        schema(path)
    elif mode == "index":
        index(path)
    elif mode == "pivot":
        pivot(path, json.loads(sys.stdin.read()))
    else:
        sys.exit(f"unknown mode {mode}")
