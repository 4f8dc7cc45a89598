"""Rows read straight from a damaged database file's pages, without SQLite's b-tree (a salvage of last resort).

When a table's root page is lost SQLite cannot reach a single row, though every leaf page that held them
may be intact: in a store of a few hundred events the root is an interior page and only it is gone. The
``sqlite3`` shell's ``.recover`` reads leaves this way, but it is not always installed, and Debian's 3.40
build fails on memlane's stores outright ("SQL logic error"). This module does the same for what a repair
needs: it reads every page of the file (and the newer copies of pages in its ``-wal``), decodes the cells
of table leaf pages (SQLite file format, https://www.sqlite.org/fileformat2.html: varints, record headers,
serial types, overflow chains) and yields the records, which ``rows_like`` then sorts out by shape: a
record with the events table's column count, an event type in its type column and an id of 32 hex digits is
an event, whatever page it sits on.

Stale copies (a row moved by a page split, left on a free page) come out too: the caller inserts with
``INSERT OR IGNORE`` and leaves out whatever a forget or a redaction touched.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable, Iterator
from typing import Any

_LEAF_TABLE = 0x0D
_WAL_HEADER = 32
_FRAME_HEADER = 24


def _varint(buf: bytes, at: int) -> tuple[int, int]:
    """(value, next offset) of the SQLite varint at ``at`` (1-9 bytes, big-endian, 7 bits a byte but the 9th)."""
    value = 0
    for i in range(8):
        byte = buf[at + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + i + 1
    return (value << 8) | buf[at + 8], at + 9


class _File:
    """The pages of a database file by number (1-based), the newer copies in its ``-wal`` taking precedence.
    Memory-mapped: a store of gigabytes is read a page at a time."""

    def __init__(self, path: str) -> None:
        self.maps: list[mmap.mmap] = []
        self.db = self._map(path)
        self.size = self.usable = self.count = 0
        self.wal_at: dict[int, int] = {}
        self.wal: mmap.mmap | None = None
        if self.db is None or len(self.db) < 100 or self.db[:16] != b"SQLite format 3\x00":
            return
        size = struct.unpack(">H", self.db[16:18])[0]
        self.size = 65536 if size == 1 else size
        self.usable = self.size - self.db[20]
        self.count = len(self.db) // self.size
        wal = self._map(path + "-wal")
        if wal is None or len(wal) < _WAL_HEADER or struct.unpack(">I", wal[8:12])[0] != self.size:
            return
        self.wal = wal
        salts = wal[16:24]
        at = _WAL_HEADER
        while at + _FRAME_HEADER + self.size <= len(wal):
            if wal[at + 8 : at + 16] != salts:
                break  # frames of an older generation: not part of the database
            number = struct.unpack(">I", wal[at : at + 4])[0]
            self.wal_at[number] = at + _FRAME_HEADER
            self.count = max(self.count, number)
            at += _FRAME_HEADER + self.size

    def _map(self, path: str) -> mmap.mmap | None:
        try:
            with open(path, "rb") as fh:
                if os.fstat(fh.fileno()).st_size == 0:
                    return None
                found = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return None
        self.maps.append(found)
        return found

    def page(self, number: int) -> bytes | None:
        if number in self.wal_at and self.wal is not None:
            at = self.wal_at[number]
            return self.wal[at : at + self.size]
        if self.db is None or not 1 <= number <= len(self.db) // self.size:
            return None
        return self.db[(number - 1) * self.size : number * self.size]

    def close(self) -> None:
        for found in self.maps:
            found.close()


def _payload(db: _File, page: bytes, at: int, usable: int) -> tuple[int, bytes]:
    """(rowid, payload) of the table-leaf cell at ``at``, following its overflow chain."""
    total, at = _varint(page, at)
    rowid, at = _varint(page, at)
    most = usable - 35
    if total <= most:
        return rowid, page[at : at + total]
    least = (usable - 12) * 32 // 255 - 23
    local = least + (total - least) % (usable - 4)
    local = local if local <= most else least
    out = bytearray(page[at : at + local])
    next_page = struct.unpack(">I", page[at + local : at + local + 4])[0]
    seen = set()
    while next_page and len(out) < total and next_page not in seen:
        seen.add(next_page)
        overflow = db.page(next_page)
        if overflow is None:
            break
        next_page = struct.unpack(">I", overflow[:4])[0]
        out += overflow[4:usable][: total - len(out)]
    return rowid, bytes(out[:total])


def _record(payload: bytes) -> list[Any]:
    """The values of one record (NULL, integers, floats, text, blobs)."""
    header_size, at = _varint(payload, 0)
    types = []
    while at < header_size:
        kind, at = _varint(payload, at)
        types.append(kind)
    values: list[Any] = []
    at = header_size
    for kind in types:
        if kind == 0:
            values.append(None)
        elif 1 <= kind <= 6:
            width = (1, 2, 3, 4, 6, 8)[kind - 1]
            values.append(int.from_bytes(payload[at : at + width], "big", signed=True))
            at += width
        elif kind == 7:
            values.append(struct.unpack(">d", payload[at : at + 8])[0])
            at += 8
        elif kind in (8, 9):
            values.append(kind - 8)
        elif kind >= 12:
            width = (kind - 12) // 2
            raw = payload[at : at + width]
            values.append(raw.decode("utf-8", "replace") if kind % 2 else bytes(raw))
            at += width
        else:
            raise ValueError("reserved serial type")
        if at > len(payload):
            raise ValueError("record runs past its payload")
    return values


def records(path: str) -> Iterator[tuple[int, list[Any]]]:
    """(rowid, values) of every cell on every table leaf page of the file that decodes; damaged ones are skipped."""
    db = _File(path)
    try:
        for number in range(1, db.count + 1):
            page = db.page(number)
            start = 100 if number == 1 else 0
            if page is None or len(page) < start + 8 or page[start] != _LEAF_TABLE:
                continue
            cells = struct.unpack(">H", page[start + 3 : start + 5])[0]
            for i in range(cells):
                try:
                    pointer = struct.unpack(">H", page[start + 8 + 2 * i : start + 10 + 2 * i])[0]
                    rowid, payload = _payload(db, page, pointer, db.usable)
                    yield rowid, _record(payload)
                except (IndexError, ValueError, struct.error):
                    continue
    finally:
        db.close()


def rows_like(
    path: str, shapes: dict[str, tuple[list[str], Callable[[dict[str, Any]], bool]]]
) -> dict[str, list[dict[str, Any]]]:
    """The records of ``path`` that fit each named shape: (column names in table order, a test of the row).

    A record may have fewer values than the table has columns (rows written before an ``ALTER TABLE ADD
    COLUMN``); the rowid stands in for an ``INTEGER PRIMARY KEY`` column, which the record stores as NULL.
    """
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in shapes}
    if not os.path.exists(path):
        return out
    for rowid, values in records(path):
        for name, (columns, test) in shapes.items():
            if not (len(columns) - 3 <= len(values) <= len(columns)):
                continue
            row = dict(zip(columns, values, strict=False))
            if row.get(columns[0]) is None:
                row[columns[0]] = rowid
            try:
                fits = test(row)
            except (TypeError, ValueError, AttributeError):
                fits = False
            if fits:
                out[name].append(row)
                break
    return out
