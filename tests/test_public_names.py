"""The names the README and the user guide use without a path import from where users look.

Issue 29: ``RowKeySpec``/``KeyField`` were shown without an import path; they are
``cellstore.RowKeySpec``/``cellstore.KeyField`` and live in ``cellstore.rowkey``.
"""

from __future__ import annotations

import subprocess
import sys

import cellstore
import cellstore.core.rowkey as core_rowkey
import cellstore.rowkey


def test_row_key_names_are_exported_from_cellstore_and_cellstore_rowkey():
    from cellstore import KeyField, RowKeySpec
    from cellstore.rowkey import KeyField as KeyField2
    from cellstore.rowkey import RowKeySpec as RowKeySpec2

    assert RowKeySpec is RowKeySpec2 is core_rowkey.RowKeySpec
    assert KeyField is KeyField2 is core_rowkey.KeyField
    assert {"RowKeySpec", "KeyField"} <= set(cellstore.__all__) & set(dir(cellstore))
    assert set(cellstore.rowkey.__all__) == {"KeyField", "KeyHash", "KeyType", "RowKeySpec"}
    assert all(
        getattr(cellstore.rowkey, n) is getattr(core_rowkey, n) for n in cellstore.rowkey.__all__
    )
    spec = RowKeySpec(fields=(KeyField(name="user"), KeyField(name="ts", type="int64")))
    assert str(spec) == "user:string + ts:int64"


def test_import_cellstore_stays_lazy_about_row_keys():
    # RowKeySpec needs pyarrow: `import cellstore` must not load it (the CLI's --help).
    code = "import sys, cellstore; print('pyarrow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
