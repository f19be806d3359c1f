"""HBase's own files, read without a JVM (layer 1, beside :mod:`cellstore.storefiles`).

File parsing that needs no reader and writes nothing, so that the loader (HFile output's
``hbase_root=``) and :mod:`cellstore.hbase` (``HBaseTable``, the importer) both build on it:

* :mod:`~cellstore.hbasefiles.paths`: names that become paths under a root, checked by
  HBase's rules (:func:`~cellstore.hbasefiles.paths.check_name`, ``RootFiles``);
* :mod:`~cellstore.hbasefiles.descriptors`: snapshot infos, manifests, table descriptors,
  region infos, References (pure decoders of bytes);
* :mod:`~cellstore.hbasefiles.meta`: a table's regions as ``hbase:meta`` lists them;
* :mod:`~cellstore.hbasefiles.layout`: a root's or snapshot's table as an ``HBaseLayout``
  (descriptor, regions in key order, resolved store files, the core families and
  regions); :mod:`~cellstore.hbasefiles.roots` opens one from a path or URL;
* :mod:`~cellstore.hbasefiles.store`: one store's HFiles as sorted runs for the semantics
  engine (``HFileStore``, what an ``HBaseTable`` scan task reads);
* :mod:`~cellstore.hbasefiles.hfiles`, :mod:`~cellstore.hbasefiles.partitions`: single
  HFiles as Arrow tables, summaries and reports; many as one Dask DataFrame.

Users import the public names (``read_hfile``, ``hfile_info``, ``read_hfiles``, ...) from
:mod:`cellstore.hbase`, the public facade. This package module imports nothing, so the
loader's ``import cellstore.hbasefiles.roots`` loads only what opening a layout needs.
"""
