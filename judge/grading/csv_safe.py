"""CSV cells a spreadsheet will not run: OWASP's rule against formula ("CSV") injection.

A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a formula to Excel,
LibreOffice and Google Sheets (``=HYPERLINK(...)`` in a file name, a display name, a student's name that
starts with ``+``). Every CSV the judge writes goes through ``writer``: such a text cell gets a leading
``'``, which spreadsheets show as text. Numbers are written as they are. ``read_cell`` undoes it, for the
CSV files the judge reads back (the tokens file).
"""

from __future__ import annotations

import csv

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value):
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def read_cell(text: str) -> str:
    """A cell as written before ``safe_cell`` (a leading ``'`` before a formula character removed)."""
    return text[1:] if text.startswith("'") and text[1:2] and text[1:].startswith(FORMULA_START) else text


class writer:
    """csv.writer whose text cells are made safe."""

    def __init__(self, f, **kwargs):
        self._w = csv.writer(f, **kwargs)

    def writerow(self, row):
        return self._w.writerow([safe_cell(v) for v in row])

    def writerows(self, rows):
        for row in rows:
            self.writerow(row)
