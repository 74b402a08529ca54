"""Regenerate the bundled demo library and queries from the MassBank data.

Run from the project root: ``python resources/make_demo.py``.  Reads
``../shared/data/massbank_ms2.mgf.gz`` and keeps only CC0 and CC BY records (the
MGF keeps each record's AUTHORS and LICENSE fields for attribution).  The
queries are real spectra of 40 compounds; the demo library holds *other*
spectra of those compounds (other instruments and collision energies) and
random further spectra, so a demo search finds true matches rather than the
query's own copy.
"""

from __future__ import annotations

import gzip
import re
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT.parent / "shared" / "data" / "massbank_ms2.mgf.gz"
LICENSES = {"CC0", "CC BY"}
N_QUERIES, N_LIBRARY = 40, 3000


def main() -> None:
    text = gzip.open(SOURCE, "rt", encoding="utf-8").read()
    blocks = re.findall(r"BEGIN IONS\n.*?END IONS\n", text, flags=re.S)
    field = lambda b, k: (re.search(rf"^{k}=(.*)$", b, flags=re.M) or [None, ""])[1]  # noqa: E731
    usable = [b for b in blocks if field(b, "LICENSE") in LICENSES and field(b, "INCHIKEY")]
    by_compound: dict[str, list[int]] = defaultdict(list)
    for k, b in enumerate(usable):
        by_compound[field(b, "INCHIKEY")[:14]].append(k)
    rng = np.random.default_rng(20261123)
    rich = sorted(c for c, ks in by_compound.items() if len(ks) >= 4)
    compounds = rng.choice(rich, size=N_QUERIES, replace=False)
    queries, library = [], set()
    for c in compounds:
        ks = by_compound[c]
        q = ks[rng.integers(len(ks))]
        queries.append(q)
        library.update(k for k in ks if k != q)
    others = np.setdiff1d(np.arange(len(usable)), np.r_[queries, sorted(library)])
    fill = rng.choice(others, size=N_LIBRARY - len(library), replace=False)
    library = sorted(library | set(fill.tolist()))
    (ROOT / "resources" / "demo_queries.mgf").write_text("".join(usable[k] + "\n" for k in queries))
    (ROOT / "resources" / "demo_library.mgf").write_text("".join(usable[k] + "\n" for k in library))
    print(f"{len(queries)} queries, {len(library)} library spectra")


if __name__ == "__main__":
    main()
