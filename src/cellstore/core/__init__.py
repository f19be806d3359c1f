"""The pure core: cells, sort order, names, family settings, regions, metadata, semantics.

Nothing in this package does I/O. Every other part of cellstore builds on it.
"""
