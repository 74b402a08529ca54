"""Import report: what a reader kept, skipped and repaired, and why."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

__all__ = ["ImportIssue", "ImportReport", "SpectrumFileError"]


class SpectrumFileError(Exception):
    """A spectrum file that cannot be read at all.

    Its message is one line naming the file and the reason, fit to show a user
    as is (no traceback needed).
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


@dataclass(frozen=True)
class ImportIssue:
    """One problem with one record.

    Attributes
    ----------
    record : int
        1-based position of the record in the file.
    title : str
        The record's title, id or name, when it had one.
    reason : str
        What was wrong, in words a chemist understands.
    skipped : bool
        True when the record was left out, False when it was kept after a repair
        (peaks sorted, invalid peaks dropped, ...).
    """

    record: int
    title: str
    reason: str
    skipped: bool = True

    def __str__(self) -> str:
        what = "skipped" if self.skipped else "repaired"
        name = f" ({self.title})" if self.title else ""
        return f"record {self.record}{name}: {what}: {self.reason}"


@dataclass
class ImportReport:
    """Summary of one file's import.

    Attributes
    ----------
    path : str
        The file.
    format : str
        Format it was read as.
    records : int
        Records seen in the file.
    spectra : int
        Spectra kept.
    issues : list of ImportIssue
        Skipped and repaired records.
    notes : list of str
        Remarks about the whole file (e.g. bytes that were not UTF-8).
    not_centroided : list of int
        Records (1-based) of the spectra kept that look like profile-mode data.
    """

    path: str
    format: str
    records: int = 0
    spectra: int = 0
    issues: list[ImportIssue] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    not_centroided: list[int] = field(default_factory=list)

    @property
    def skipped(self) -> list[ImportIssue]:
        """Issues of records that were left out."""
        return [i for i in self.issues if i.skipped]

    @property
    def repaired(self) -> list[ImportIssue]:
        """Issues of records that were kept after a repair."""
        return [i for i in self.issues if not i.skipped]

    def summary(self) -> str:
        """One line: spectra read, records skipped and repaired."""
        return (
            f"{self.path}: {self.spectra} spectra read as {self.format.upper()} from "
            f"{self.records} records; {len(self.skipped)} skipped, {len(self.repaired)} repaired"
            + "".join(f"; {note}" for note in self.notes)
        )

    def __str__(self) -> str:
        return "\n".join([self.summary(), *(f"  {i}" for i in self.issues)])

    def to_dict(self) -> dict:
        """JSON-ready form (used by the library cache)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ImportReport:
        """Inverse of :meth:`to_dict`."""
        issues = [ImportIssue(**i) for i in data.get("issues", [])]
        return cls(**{**data, "issues": issues})
