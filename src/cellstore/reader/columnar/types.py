"""Names the column layout's read modules share."""

from __future__ import annotations

import pyarrow as pa

from cellstore.core.codecs import Codec

#: A wide column: (family, qualifier).
Column = tuple[str, bytes]
#: A column's values and the codec they are typed with (the file's).
Typed = tuple[pa.Array, Codec]
