"""The column layout's read side: wide reads from column files, merged with their deltas.

- :mod:`.fast`: which tasks qualify and the wide read itself (start here);
- :mod:`.base`: a family's column files read and cut to the task's key range;
- :mod:`.merge`: a family's column files merged with cell deltas (by row where it can);
- :mod:`.union`: cells pivoted into records, the sorted union of record runs;
- :mod:`.join`: families joined on the row into one wide table.
"""

from cellstore.reader.columnar.fast import fast_wide_families, read_wide_fast
from cellstore.reader.columnar.merge import older_companions

__all__ = ["fast_wide_families", "older_companions", "read_wide_fast"]
