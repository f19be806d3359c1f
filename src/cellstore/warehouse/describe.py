"""Typed descriptions of a table (``Table.describe``), from :mod:`cellstore.reader.describe`."""

from __future__ import annotations

from cellstore.reader.describe import RegionDescription, TableDescription

__all__ = ["RegionDescription", "TableDescription"]
