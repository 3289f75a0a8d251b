"""Vector-space topic filter: relevance as the cosine of tf-idf vectors.

The topic is a term vector built from sample texts on the topic (the
``*.txt`` files of the job's ``samples/`` directory): the mean of their
tf-idf vectors, idf taken over the samples. A page is a tf-idf vector of its
words too, with its title words counted TITLE_WEIGHT times, since a title
says most about what a page is about. Relevance is the cosine of the angle
between the two, in [0, 1]. Term frequencies are sublinear (1 + ln tf), so
one word repeated does not make a page.

The page's vector keeps the words the samples never use, so a long page that
mentions the topic once stays far from it. Such a word gets idf 1, the
weight of a word every sample uses: the samples cannot say how specific it
is, and weighing it as the most specific would let any page's own vocabulary
swamp its topic words. Text is prepared as Combine prepares it; stopwords are
dropped, from the job's ``stopwords.txt`` when it has one, otherwise English
ones: common words would make every page look alike.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, TfidfVectorizer

from combine_scrapy.topic.definition import STOPWORDS_FILE, load_stopwords
from combine_scrapy.topic.matching import Classification
from combine_scrapy.topic.text import Document, tokens

SAMPLES_DIR = "samples"
#: Cosine similarity a page needs to be relevant.
DEFAULT_THRESHOLD = 0.2
TITLE_WEIGHT = 2
#: idf of a word no sample uses (see above).
UNSEEN_IDF = 1.0
#: How many of the terms the page shares with the topic its classification lists.
TOP_TERMS = 10


def load_samples(job_dir: Path | str) -> list[str]:
    """The texts of ``<job_dir>/samples/*.txt``; ValueError names the directory or file that fails."""
    directory = Path(job_dir) / SAMPLES_DIR
    paths = sorted(directory.glob("*.txt"))
    if not paths:
        raise ValueError(f"{directory}: no sample texts; put *.txt files about the topic there")
    samples = []
    for path in paths:
        try:
            samples.append(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from e
        except OSError as e:
            raise ValueError(f"{path}: cannot read: {e.strerror}") from e
    return samples


def job_stopwords(job_dir: Path | str) -> frozenset[str]:
    """The job's stopwords.txt, or scikit-learn's English stopwords without one."""
    return load_stopwords(Path(job_dir) / STOPWORDS_FILE) or frozenset(ENGLISH_STOP_WORDS)


class VectorClassifier:
    """Relevant when the cosine between page and topic reaches the threshold (tot_cutoff, 0.2 by default)."""

    algorithm = "Vector"

    def __init__(
        self,
        samples: Sequence[str],
        threshold: float = DEFAULT_THRESHOLD,
        stopwords: frozenset[str] = frozenset(),
        source: str = "the sample texts",
    ):
        self.threshold = threshold
        self._analyze = partial(tokens, stopwords=stopwords)
        vectorizer = TfidfVectorizer(analyzer=self._analyze, sublinear_tf=True)
        try:
            sample_vectors = vectorizer.fit_transform(samples)
        except ValueError as e:  # every sample empty or made of stopwords only
            raise ValueError(f"{source}: no words to build a topic vector from, only stopwords or none") from e
        centroid = np.asarray(sample_vectors.mean(axis=0)).ravel()
        centroid /= np.linalg.norm(centroid)
        names = vectorizer.get_feature_names_out()
        self.topic = {str(names[i]): float(centroid[i]) for i in np.flatnonzero(centroid)}
        self._idf = {str(name): float(idf) for name, idf in zip(names, vectorizer.idf_)}

    def page_vector(self, document: Document) -> dict[str, float]:
        counts = Counter(self._analyze(document.title) * TITLE_WEIGHT)
        for part in (document.meta, document.headings, document.text):
            counts.update(self._analyze(part))
        return {
            term: (1 + math.log(count)) * self._idf.get(term, UNSEEN_IDF) for term, count in counts.items()
        }

    def classify(self, document: Document) -> Classification:
        page = self.page_vector(document)
        norm = math.sqrt(sum(weight * weight for weight in page.values()))
        shared = {term: weight * self.topic[term] for term, weight in page.items() if term in self.topic}
        score = min(sum(shared.values()) / norm, 1.0) if norm else 0.0  # 1.0: rounding can pass it
        terms = tuple(sorted(shared, key=shared.__getitem__, reverse=True)[:TOP_TERMS])
        return Classification(score >= self.threshold, score, score, terms=terms, algorithm=self.algorithm)
