"""Any text a file holds reaches every output: made safe once, at the reader.

A GNPS JSON library of real spectra whose names and ids carry every class of
odd text legal in JSON: lone UTF-16 surrogates, NUL, ANSI escapes, line breaks,
C1 controls, non-characters, next to valid text that must stay as it is.
"""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from engine import read_library
from engine.cli import main

ODD = [
    "S\ud800x",  # lone high surrogate
    "lone low \udfff end",
    "nul\x00inside",
    "\x1b[31mred\x1b[0m",  # ANSI escape
    "two\r\nlines\x85",  # line break, C1 next line
    "del\x7f and \x9b csi",
    "non\ufffecharacters\uffff",
]
#: Text that is valid and must come out unchanged.
KEPT = ["tab\tinside", "\u202eright-to-left\u202c", "emoji \U0001f9ea", '=1+2;"quoted",#x']


def _odd_library(path, pesticides):
    records = []
    names = ODD + KEPT
    for k, name in enumerate(names):
        s = k % 3  # three spectra, each several times: networks and clusters link them
        mz, intensity = pesticides.peaks(s)
        records.append(
            {
                "spectrum_id": f"{name}#{k}",
                "Compound_Name": name,
                "peaks_json": json.dumps(np.column_stack([mz, intensity]).tolist()),
                "Precursor_MZ": str(pesticides.precursor_mz[s]),
                "Ion_Mode": "Negative",
                "Adduct": "[M-H]-",
                "Smiles": name,
                "INCHI": "",
            }
        )
    # json.dumps writes the lone surrogates as the escapes a file would hold
    path.write_text(json.dumps(records), encoding="ascii")
    return names


def _safe(text: str) -> bool:
    text.encode("utf-8")  # raises on a surrogate
    return not any(ord(c) < 32 and c != "\t" or 0x7F <= ord(c) <= 0x9F for c in text)


@pytest.fixture(scope="module")
def odd(tmp_path_factory, pesticides):
    path = tmp_path_factory.mktemp("odd") / "odd.json"
    return path, _odd_library(path, pesticides)


def test_the_reader_repairs_odd_text_and_names_each_record(odd):
    path, names = odd
    lib = read_library(path)
    assert len(lib) == len(names)
    for column in lib.metadata.values():
        assert all(_safe(value) for value in column)
    name = lib.metadata["name"]
    assert name[0] == "S\ufffdx" and name[2] == "nulinside" and name[3] == "[31mred[0m"
    assert name[4] == "twolines" and name[6] == "non\ufffdcharacters\ufffd"
    assert list(name[len(ODD) :]) == KEPT  # valid text untouched
    repaired = {i.record: i.reason for i in lib.report.repaired}
    assert sorted(repaired) == list(range(1, len(ODD) + 1))
    assert "replaced by U+FFFD" in repaired[1] and "control character" in repaired[3]
    assert all(_safe(str(issue)) for issue in lib.report.issues)


def test_search_network_and_cluster_write_every_output(odd, tmp_path, library_cache, capsys):
    path, names = odd
    for suffix in ("tsv", "csv", "parquet"):
        out = tmp_path / f"hits.{suffix}"
        assert main(["search", str(path), str(path), "-o", str(out), "--mode", "custom"]) == 0
        if suffix == "parquet":
            hits = pd.read_parquet(out)
        else:
            hits = pd.read_csv(out, sep="\t" if suffix == "tsv" else ",", comment="#")
        # text cells a spreadsheet would run as a formula are written with a ' first
        ids = {v.removeprefix("'") for v in hits["query_id"]}
        assert ids == {f"{n}#{k}" for k, n in enumerate(_clean(names))}
    graph, edges = tmp_path / "net.graphml", tmp_path / "edges.tsv"
    args = ["network", str(path), "-o", str(graph), "--edges", str(edges), "--library", str(path)]
    assert main(args) == 0
    network = nx.read_graphml(graph)
    assert network.number_of_nodes() == len(names) and network.number_of_edges() > 0
    assert {d["name"] for _, d in network.nodes(data=True)} == set(_clean(names))
    assert len(pd.read_csv(edges, sep="\t", comment="#")) == network.number_of_edges()
    clusters = tmp_path / "clusters.tsv"
    assert main(["cluster", str(path), "-o", str(clusters)]) == 0
    table = pd.read_csv(clusters, sep="\t", comment="#")
    assert len(table) == len(names)
    capsys.readouterr()


def _clean(names):
    from engine.io.fields import clean_text

    return [clean_text(n)[0] for n in names]


def test_a_number_of_100000_digits_costs_one_value_not_the_file(tmp_path, pesticides):
    mz, intensity = pesticides.peaks(0)
    peaks = json.dumps(np.column_stack([mz, intensity]).tolist())
    good = {"spectrum_id": "good", "peaks_json": peaks, "Precursor_MZ": "300.1"}
    path = tmp_path / "big.json"
    path.write_text(
        '[{"spectrum_id": "huge", "peaks_json": ' + json.dumps(peaks) + ', "Precursor_MZ": '
        + "1" * 100_000 + "}, " + json.dumps(good) + "]"
    )  # fmt: skip
    lib = read_library(path)
    assert list(lib.metadata["id"]) == ["huge", "good"]
    assert np.isnan(lib.precursor_mz[0]) and lib.precursor_mz[1] == 300.1
    assert "record 1 (huge): repaired: invalid precursor m/z inf ignored" in str(lib.report)
