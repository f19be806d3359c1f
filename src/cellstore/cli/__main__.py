"""``python -m cellstore.cli``."""

from cellstore.cli import main

main()
