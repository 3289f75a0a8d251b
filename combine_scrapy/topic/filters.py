"""Choose and build a job's topic filter from its ``classifyPlugIn`` setting.

``plain`` (Algorithm 1, the default) and ``position`` (Algorithm 2) are
Combine's built-in classifiers; Combine's module names for them are accepted
too. ``svm`` scores pages with the SVM model ``scrapy train`` wrote into the
job directory; ``vector`` with their cosine similarity to the job's sample
texts (``samples/*.txt``). Anything else names a Python callable,
``package.module:function`` or ``file.py:function`` beside the job's files,
that receives a :class:`~combine_scrapy.topic.text.Document` and returns
True/False, a score (relevant when it reaches ``tot_cutoff``, or is above 0
without one), or a full :class:`~combine_scrapy.topic.matching.Classification`.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from combine_scrapy.topic.definition import TopicDefinition
from combine_scrapy.topic.matching import (
    PLAIN_CUTOFFS,
    POSITION_CUTOFFS,
    Classification,
    Cutoffs,
    PlainMatcher,
    PositionMatcher,
)
from combine_scrapy.topic.text import Document, tokens

logger = logging.getLogger(__name__)

#: classifyPlugIn = position's default cut-offs. Combine's total of 1 made one passing mention anywhere in a
#: page relevant; 90, as for plain, asks for the topic in the title or a few times in the text (one mention
#: of a weight-50 term scores 123 as the first word, 21 as the 20th, 13 as the 100th).
POSITION_DEFAULT_CUTOFFS = Cutoffs(total=90, normalized=POSITION_CUTOFFS.normalized, relative=POSITION_CUTOFFS.relative)

PLAIN_NAMES = ("plain", "Std", "Combine::Check_record")
POSITION_NAMES = ("position", "Pos", "Combine::PosCheck_record")
SVM_NAMES = ("svm", "SVM")
VECTOR_NAMES = ("vector", "Vector")


class Classifier(Protocol):
    def classify(self, document: Document) -> Classification: ...


class PluginClassifier:
    """Adapt a user's callable to the Classifier interface."""

    def __init__(self, name: str, function: Callable[[Document], object], tot_cutoff: float | None):
        self.name = name
        self.function = function
        self.tot_cutoff = tot_cutoff

    def classify(self, document: Document) -> Classification:
        answer = self.function(document)
        if isinstance(answer, Classification):
            return answer
        if isinstance(answer, bool):
            return Classification(answer, float(answer), float(answer), algorithm=self.name)
        if isinstance(answer, (int, float)):
            threshold_met = answer >= self.tot_cutoff if self.tot_cutoff is not None else answer > 0
            return Classification(threshold_met, float(answer), float(answer), algorithm=self.name)
        raise TypeError(f"classifyPlugIn {self.name} returned {type(answer).__name__}; expected bool, a number or a Classification")


@dataclasses.dataclass(frozen=True)
class TopicFilter:
    """A job's topic filter: its classifier, with sitesOK.txt hosts always accepted."""

    classifier: Classifier
    sites_ok: frozenset[str] = frozenset()

    def classify(self, document: Document) -> Classification:
        result = self.classifier.classify(document)
        if not result.relevant and self._site_ok(document.host):
            return dataclasses.replace(result, relevant=True)
        return result

    def _site_ok(self, host: str) -> bool:
        host = host.lower()
        return host in self.sites_ok or host.rsplit(":", 1)[0] in self.sites_ok


def _warn_regular_expressions(definition: TopicDefinition) -> None:
    """Position matching compares whole words and reads no regular expression: name each such term, and
    the words it looks for instead, when the job loads."""
    for term in definition.terms:
        if term.is_regex:
            words = " @and ".join(" ".join(tokens(part, definition.stopwords)) for part in term.parts)
            logger.warning(
                "%s:%d: %r is a regular expression, which classifyPlugIn = position ignores: it looks for the "
                "words %r instead; write each word form as its own term, or use classifyPlugIn = plain",
                definition.source, term.line, term.text, words,
            )


def _cutoffs(defaults: Cutoffs, total: float | None, normalized: float | None, relative: float | None) -> Cutoffs:
    return Cutoffs(
        total=defaults.total if total is None else total,
        normalized=defaults.normalized if normalized is None else normalized,
        relative=defaults.relative if relative is None else relative,
    )


def load_plugin(spec: str, job_dir: Path | None = None) -> Callable[[Document], object]:
    """Import ``module:function`` (or ``module.function``); ``file.py:function`` is looked up in the job directory."""
    if ":" in spec:
        module_name, _, attribute = spec.partition(":")
    else:
        module_name, _, attribute = spec.rpartition(".")
    if not module_name or not attribute:
        raise ValueError(
            f"expected {', '.join(names[0] for names in (PLAIN_NAMES, POSITION_NAMES, SVM_NAMES, VECTOR_NAMES))}"
            " or a callable as 'package.module:function'"
        )
    if module_name.endswith(".py"):
        path = Path(job_dir or ".") / module_name
        if not path.exists():
            raise ImportError(f"no file {path}")
        module_spec = importlib.util.spec_from_file_location(f"combine_plugin_{path.stem}", path)
        if module_spec is None or module_spec.loader is None:
            raise ImportError(f"{path} cannot be loaded as a Python module")
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    try:
        function: object = getattr(module, attribute)
    except AttributeError as e:
        raise ImportError(f"{module_name} has no {attribute!r}") from e
    if not callable(function):
        raise ValueError(f"{spec} is not callable")
    return function


def build_filter(
    classify_plugin: str,
    definition: TopicDefinition | None,
    *,
    tot_cutoff: float | None = None,
    cutoff_norm: float | None = None,
    cutoff_rel: float | None = None,
    sites_ok: frozenset[str] = frozenset(),
    job_dir: Path | None = None,
) -> TopicFilter:
    """The topic filter a job's settings ask for; ValueError or ImportError says what is wrong."""
    classifier: Classifier
    if classify_plugin in PLAIN_NAMES or classify_plugin in POSITION_NAMES:
        if definition is None:
            raise ValueError("the built-in classifiers need a topic definition")
        if classify_plugin in PLAIN_NAMES:
            classifier = PlainMatcher(definition, _cutoffs(PLAIN_CUTOFFS, tot_cutoff, cutoff_norm, cutoff_rel))
        else:
            _warn_regular_expressions(definition)
            classifier = PositionMatcher(definition, _cutoffs(POSITION_DEFAULT_CUTOFFS, tot_cutoff, cutoff_norm, cutoff_rel))
        for line, why in definition.skipped:
            logger.warning("%s:%d: row skipped: %s", definition.source, line, why)
    elif classify_plugin in SVM_NAMES:
        # Imported here: scikit-learn takes over a second to load, and most jobs never need it.
        from combine_scrapy.topic.svm import DEFAULT_THRESHOLD, MODEL_FILE, SvmClassifier, load_model

        model = load_model(Path(job_dir or ".") / MODEL_FILE)
        classifier = SvmClassifier(model, DEFAULT_THRESHOLD if tot_cutoff is None else tot_cutoff)
    elif classify_plugin in VECTOR_NAMES:
        from combine_scrapy.topic.vector import (
            DEFAULT_THRESHOLD,
            SAMPLES_DIR,
            VectorClassifier,
            job_stopwords,
            load_samples,
        )

        directory = Path(job_dir or ".")
        classifier = VectorClassifier(
            load_samples(directory),
            DEFAULT_THRESHOLD if tot_cutoff is None else tot_cutoff,
            stopwords=job_stopwords(directory),
            source=str(directory / SAMPLES_DIR),
        )
    else:
        classifier = PluginClassifier(classify_plugin, load_plugin(classify_plugin, job_dir), tot_cutoff)
    return TopicFilter(classifier, frozenset(sites_ok))
