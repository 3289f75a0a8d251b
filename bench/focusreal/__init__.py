"""A focus benchmark on real pages: Debian documentation packages served as named hosts (``python -m bench.focusreal``)."""
