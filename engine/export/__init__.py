"""Hit lists as tables: the columns users see, written atomically with provenance.

The same :func:`hit_columns` feeds the ``simms`` CLI, the GUI results table and
the exports, so every view of a search shows the same numbers.  Files are
written by :class:`HitWriter`, chunk by chunk as a search streams its hits, so
memory stays bounded whatever the number of hits.

TSV and CSV files read back whole with ``pandas.read_csv(path, sep="\t",
comment="#")`` (``sep=","`` for CSV) or :func:`read_hits`:

- ``#`` lines before the header row hold the provenance; ``# complete: yes`` or
  ``# complete: no (why)`` says whether the search ran to its end;
- text fields are always quoted, so a ``#`` inside a SMILES is never taken for
  a comment (pandas' default C parser honours quotes);
- a text field that a spreadsheet would run as a formula (it starts with ``=``,
  ``+``, ``-``, ``@``, a tab or a carriage return) gets a leading ``'``;
  :func:`read_hits` removes it again;
- m/z columns are rounded to 8 decimals (1e-8 Da, far below any instrument's
  precision) so they print as they were read, e.g. ``112.1258``.

Every export accounts for every query: TSV, CSV and Parquet files get a
sibling ``<name>.queries.<ext>`` (:mod:`engine.export.queries`: each query's
status and best hit).  :func:`write_mztab` writes mzTab-M 2.0 (the queries as
its SMF rows; read back by ``pyteomics.mztab.MzTab``), :func:`write_gnps` a
GNPS-style library-match TSV; :func:`open_writer` opens any of them.  The
ambiguity columns (``tied``, ``tied_compounds``, ``few_peaks``, ``isomers``:
:mod:`engine.search.ambiguity`) are in every format.
"""

from engine.export.columns import HIT_COLUMNS, hit_columns, provenance_lines
from engine.export.formats import DocumentWriter, open_writer
from engine.export.gnps import GNPS_COLUMNS, gnps_columns, write_gnps
from engine.export.mztab import MZTAB_VERSION, mztab_lines, write_mztab
from engine.export.queries import QUERY_COLUMNS, QueryTally, queries_path, write_queries
from engine.export.reader import read_hits
from engine.export.writer import HitWriter, check_output, write_hits

__all__ = [
    "GNPS_COLUMNS",
    "HIT_COLUMNS",
    "MZTAB_VERSION",
    "QUERY_COLUMNS",
    "DocumentWriter",
    "HitWriter",
    "QueryTally",
    "check_output",
    "gnps_columns",
    "hit_columns",
    "mztab_lines",
    "open_writer",
    "provenance_lines",
    "queries_path",
    "read_hits",
    "write_gnps",
    "write_hits",
    "write_mztab",
    "write_queries",
]
