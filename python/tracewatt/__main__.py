"""``python -m tracewatt`` is the ``tracewatt`` command."""

from tracewatt.cli import entry

entry()
