"""HBase HFile v2/v3: the on-disk format, in pure Python (numpy/pyarrow vectorized).

The package knows the file format only, not HBase's directory layouts. Modules come in
read/write pairs so each structure is defined beside its serializer:

* :mod:`.varint`: Hadoop VInt/VLong and protobuf varints;
* :mod:`.trailer`: the fixed file trailer (protobuf v3, Writable v2) and versions;
* :mod:`.checksums`, :mod:`.codecs`, :mod:`.blocks`: block headers, HBase checksums,
  compression with HBase's on-disk framing;
* :mod:`.index`, :mod:`.fileinfo`, :mod:`.bloom`: block indexes, the FileInfo map and the
  compound Bloom filters;
* :mod:`.keys`, :mod:`.cells`, :mod:`.encodings`: KeyValue keys, vectorized cell decoding
  of data blocks, and the data block encodings (PREFIX, DIFF, FAST_DIFF, ROW_INDEX_V1);
* :mod:`.reader`: opening a file on any fsspec filesystem and reading its cells (the
  index descent a row range needs is :mod:`.descent`, the batched decoding
  :mod:`.batches`); :mod:`.readoptions`: :class:`~.readoptions.HFileReadOptions`, which
  cells are read and how (exported here);
* :mod:`.serialize`, :mod:`.writer` (and friends): the write half.

The normative description with HBase source citations is ``docs/hfile.md``.
"""

from cellstore.storefiles.hfile.readoptions import HFileReadKwargs, HFileReadOptions

__all__ = ["HFileReadKwargs", "HFileReadOptions"]
