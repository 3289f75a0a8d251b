"""The focus web: a generated web for the focus benchmark, its topics hidden deep behind off-topic pages.

``FocusWeb`` is the web and its ground truth, ``python -m bench.focusweb``
serves it (with bench/virtualweb's proxy server), writes a job for one of its
topics, or describes it. See bench/README.md and bench/focushard.py.
"""

from bench.focusweb.vocabulary import TOPICS, Topic
from bench.focusweb.web import FocusWeb

__all__ = ["TOPICS", "FocusWeb", "Topic"]
