"""SVM topic filter: Combine's SVMLight option, with scikit-learn.

A page's title, meta, headings and text are prepared as Combine prepares them
(:func:`~combine_scrapy.topic.text.tokens`), weighted by tf-idf and scored by
a linear SVM trained on example pages on and off the topic. The score is the
SVM's decision value: its sign says on which side of the separating plane the
page falls, its size how far. The trained model is ``svm-model.joblib`` in the
job directory, written by ``scrapy train``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import joblib
import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.svm import LinearSVC

from combine_scrapy.topic.matching import Classification
from combine_scrapy.topic.text import Document, tokens

MODEL_FILE = "svm-model.joblib"
#: Decision value a page needs to be relevant: 0 is the separating plane.
DEFAULT_THRESHOLD = 0.0
#: How many of the terms that pushed a page towards the topic its classification lists.
TOP_TERMS = 10
CROSS_VALIDATION_FOLDS = 5


def page_text(document: Document) -> str:
    """The parts of a page the SVM reads, as one text; training examples go through it too."""
    return "\n".join((document.title, document.meta, document.headings, document.text))


def _pipeline() -> Pipeline:
    # Balanced class weights: users rarely collect as many negative examples as positive ones.
    return Pipeline([
        ("tfidf", TfidfVectorizer(analyzer=tokens, sublinear_tf=True)),
        ("svm", LinearSVC(class_weight="balanced")),
    ])


def _labelled(positive_texts: Sequence[str], negative_texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    if not positive_texts or not negative_texts:
        raise ValueError(
            f"an SVM needs examples of both kinds; got {len(positive_texts)} positive and {len(negative_texts)} negative"
        )
    labels = np.array([1] * len(positive_texts) + [0] * len(negative_texts))
    return [*positive_texts, *negative_texts], labels


def train_svm(positive_texts: Sequence[str], negative_texts: Sequence[str]) -> Pipeline:
    """A model that gives on-topic texts a positive decision value and off-topic ones a negative value."""
    texts, labels = _labelled(positive_texts, negative_texts)
    return _pipeline().fit(texts, labels)


def cross_validated_accuracy(
    positive_texts: Sequence[str], negative_texts: Sequence[str], folds: int = CROSS_VALIDATION_FOLDS
) -> float | None:
    """Mean accuracy over ``folds`` stratified folds; None when a kind has fewer than ``folds`` examples."""
    if min(len(positive_texts), len(negative_texts)) < folds:
        return None
    texts, labels = _labelled(positive_texts, negative_texts)
    splits = StratifiedKFold(n_splits=folds, shuffle=True, random_state=0)
    return float(cross_val_score(_pipeline(), texts, labels, cv=splits, scoring="accuracy").mean())


def _train_hint(path: Path) -> str:
    return f"train it with: scrapy train {path.parent.name or 'JOB'} --positive FOLDER --negative FOLDER"


def save_model(model: Pipeline, path: Path | str) -> None:
    """Write the model; a crawl starting meanwhile reads the old file or the new one, never half of one."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    joblib.dump(model, partial)
    os.replace(partial, path)


def load_model(path: Path | str) -> Pipeline:
    """The model ``scrapy train`` wrote; ValueError names the file and how to make it."""
    path = Path(path).absolute()
    if not path.exists():
        raise ValueError(f"{path}: no SVM model; {_train_hint(path)}")
    try:
        model = joblib.load(path)
    except Exception as e:  # unpickling a damaged or foreign file can raise anything
        raise ValueError(f"{path}: cannot read the SVM model ({type(e).__name__}: {e}); {_train_hint(path)}") from e
    if not isinstance(model, Pipeline) or list(model.named_steps) != ["tfidf", "svm"]:
        raise ValueError(f"{path}: not an SVM model written by scrapy train; {_train_hint(path)}")
    return model


class SvmClassifier:
    """Relevant when the SVM's decision value reaches the threshold (tot_cutoff, 0 by default)."""

    algorithm = "SVM"

    def __init__(self, model: Pipeline, threshold: float = DEFAULT_THRESHOLD):
        self.model = model
        self.threshold = threshold
        self._vectorizer: TfidfVectorizer = model.named_steps["tfidf"]
        self._svm: LinearSVC = model.named_steps["svm"]
        self._names = self._vectorizer.get_feature_names_out()

    def classify(self, document: Document) -> Classification:
        features = self._vectorizer.transform([page_text(document)])
        score = float(self._svm.decision_function(features)[0])
        # A term's share of the decision value: its tf-idf weight times the SVM's coefficient.
        contributions = features.multiply(self._svm.coef_[0]).tocsr()
        strongest = np.argsort(-contributions.data)[:TOP_TERMS]
        terms = tuple(
            str(self._names[contributions.indices[i]]) for i in strongest if contributions.data[i] > 0
        )
        return Classification(score >= self.threshold, score, score, terms=terms, algorithm=self.algorithm)
