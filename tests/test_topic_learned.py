"""The learned topic filters: SVM (trained with ``scrapy train``) and vector-space similarity."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import JobDir, free_port

from combine_scrapy.commands.train import ExampleError, read_examples
from combine_scrapy.job import load_job
from combine_scrapy.operations.sampleweb import LoopbackWeb, Page
from combine_scrapy.topic import Document, build_filter
from combine_scrapy.topic.svm import MODEL_FILE, SvmClassifier, load_model, save_model, train_svm
from combine_scrapy.topic.vector import VectorClassifier, job_stopwords

PLANTS = [
    "Sundews (Drosera) are carnivorous plants that catch insects with sticky glands on their leaves.",
    "Nepenthes, the tropical pitcher plants, trap insects in pitchers filled with digestive liquid.",
    "The Venus flytrap closes its leaves when an insect touches the trigger hairs, then digests its prey.",
    "Sarracenia are carnivorous pitcher plants of North American bogs; insects drown in their pitchers.",
    "Butterworts (Pinguicula) are carnivorous plants whose sticky leaves trap small insects and gnats.",
    "Bladderworts suck tiny aquatic prey into bladder traps; carnivorous plants grow in poor, wet soil.",
]
BASEBALL = [
    "The pitcher threw a fastball and the batter hit a home run in the ninth inning of the baseball game.",
    "Baseball season starts in April; pitchers and catchers report to spring training in February.",
    "The team won the World Series after their starting pitcher struck out twelve batters.",
]
COOKING = [
    "Whisk the eggs with sugar, fold in the flour and bake the cake for forty minutes in a hot oven.",
    "Simmer the tomato sauce with garlic and basil, then pour it over freshly cooked pasta.",
    "Roast the chicken with lemon, rosemary and potatoes until the skin is golden and crisp.",
]
UNSEEN_PLANT = Document(
    "http://x/dewy-pine", title="The dewy pine",
    text="Drosophyllum is a carnivorous plant: insects stick to the glands of its leaves and are digested.",
)
UNSEEN_OFF_TOPIC = [
    Document("http://x/umpire", text="The baseball pitcher and the catcher argued with the umpire in the last inning."),
    Document("http://x/bread", title="Bread", text="Knead the dough, let it rise, then bake the bread in a hot oven."),
]


def svm_job(job_dir: JobDir) -> JobDir:
    """A job that filters with the SVM alone: no topicdefinition.txt."""
    job_dir.write("classifyPlugIn = svm\n", "", ["http://127.0.0.2:1/"])
    (job_dir.topics / job_dir.name / "topicdefinition.txt").unlink()
    return job_dir


def write_samples(directory: Path, texts: list[str]) -> None:
    (directory / "samples").mkdir(parents=True)
    for number, text in enumerate(texts):
        (directory / "samples" / f"{number}.txt").write_text(text)


@pytest.fixture(scope="module")
def model():
    return train_svm(PLANTS, BASEBALL + COOKING)


def test_svm_classifies_unseen_texts(model):
    classifier = SvmClassifier(model)
    plant = classifier.classify(UNSEEN_PLANT)
    assert plant.relevant and plant.score > 0 and plant.algorithm == "SVM"
    assert "carnivorous" in plant.terms
    for document in UNSEEN_OFF_TOPIC:
        result = classifier.classify(document)
        assert not result.relevant and result.score < 0, document.url


def test_svm_threshold_moves_the_cut(model):
    score = SvmClassifier(model).classify(UNSEEN_PLANT).score
    assert not SvmClassifier(model, threshold=score + 0.01).classify(UNSEEN_PLANT).relevant


def test_svm_needs_both_kinds_of_example():
    with pytest.raises(ValueError, match="got 2 positive and 0 negative"):
        train_svm(PLANTS[:2], [])


def test_model_survives_save_and_load(model, tmp_path):
    path = tmp_path / "job" / MODEL_FILE
    path.parent.mkdir()
    save_model(model, path)
    loaded = load_model(path)
    for document in [UNSEEN_PLANT, *UNSEEN_OFF_TOPIC]:
        assert SvmClassifier(loaded).classify(document) == SvmClassifier(model).classify(document)
    assert [p.name for p in path.parent.iterdir()] == [MODEL_FILE]


def test_missing_or_damaged_model_says_which_file_and_how_to_train(tmp_path):
    path = tmp_path / "plants" / MODEL_FILE
    with pytest.raises(ValueError) as missing:
        load_model(path)
    assert str(missing.value) == (
        f"{path}: no SVM model; train it with: scrapy train plants --positive FOLDER --negative FOLDER"
    )
    path.parent.mkdir()
    path.write_text("not a model")
    with pytest.raises(ValueError, match="cannot read the SVM model .*scrapy train plants"):
        load_model(path)


def test_vector_scores_a_topical_page_above_an_off_topic_one():
    classifier = VectorClassifier(PLANTS, stopwords=job_stopwords("/nonexistent"))
    plant = classifier.classify(UNSEEN_PLANT)
    assert plant.algorithm == "Vector" and plant.relevant and 0.2 <= plant.score <= 1
    assert {"carnivorous", "insects"} <= set(plant.terms)
    for document in UNSEEN_OFF_TOPIC:
        result = classifier.classify(document)
        assert not result.relevant and result.score < plant.score / 2, (document.url, result.score)


def test_vector_threshold_and_title_weight():
    strict = VectorClassifier(PLANTS, threshold=0.9)
    assert not strict.classify(UNSEEN_PLANT).relevant
    body_only = Document("http://x/", text="carnivorous plants " + "weather report " * 5)
    titled = Document("http://x/", title="carnivorous plants", text="weather report " * 5)
    assert strict.classify(titled).score > strict.classify(body_only).score


def test_vector_needs_samples_with_words(tmp_path):
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / 'samples'}: no sample texts")):
        build_filter("vector", None, job_dir=tmp_path)
    write_samples(tmp_path, ["The and of", "42"])
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / 'samples'}: no words to build a topic vector from")):
        build_filter("vector", None, job_dir=tmp_path)


def test_vector_stopwords_are_the_jobs_own_when_it_has_them(tmp_path):
    assert "the" in job_stopwords(tmp_path)
    (tmp_path / "stopwords.txt").write_text("och att\n")
    assert job_stopwords(tmp_path) == {"och", "att"}


def test_build_filter_loads_svm_and_vector_from_the_job_directory(model, tmp_path):
    save_model(model, tmp_path / MODEL_FILE)
    write_samples(tmp_path, PLANTS)
    for name in ("svm", "vector"):
        topic_filter = build_filter(name, None, job_dir=tmp_path, sites_ok=frozenset({"garden.example"}))
        assert topic_filter.classify(UNSEEN_PLANT).relevant
        assert not topic_filter.classify(UNSEEN_OFF_TOPIC[1]).relevant
        assert topic_filter.classify(Document("http://garden.example/", text="bread", host="garden.example")).relevant
    assert not build_filter("svm", None, job_dir=tmp_path, tot_cutoff=5).classify(UNSEEN_PLANT).relevant
    assert not build_filter("vector", None, job_dir=tmp_path, tot_cutoff=0.99).classify(UNSEEN_PLANT).relevant


@pytest.mark.crawl
def test_scrapy_train_on_folders_writes_a_model_the_job_loads(job_dir, tmp_path):
    svm_job(job_dir)
    positive, baseball, cooking = (tmp_path / name for name in ("plants", "baseball", "cooking"))
    for folder, texts in ((positive, PLANTS), (baseball, BASEBALL), (cooking, COOKING)):
        (folder / "sub").mkdir(parents=True)
        for number, text in enumerate(texts[1:]):
            (folder / f"{number}.txt").write_text(text)
        (folder / "sub" / "page.html").write_text(f"<html><head><title>Example</title></head><body><p>{texts[0]}</p></body></html>")
    (positive / "notes.md").write_text("not an example")
    (positive / "empty.txt").write_text("42 ...")

    result = job_dir.scrapy("train", "t", "--positive", str(positive), "--negative", str(baseball), "--negative", str(cooking))

    assert result.returncode == 0, result.stderr
    assert "trained on 6 positive and 6 negative examples" in result.stdout
    assert "5-fold cross-validation accuracy: " in result.stdout
    assert f"skipped {positive / 'empty.txt'}: no words" in result.stderr
    job = load_job("t", job_dir.topics)
    assert job.topic_filter.classify(UNSEEN_PLANT).relevant
    assert not any(job.topic_filter.classify(document).relevant for document in UNSEEN_OFF_TOPIC)


@pytest.mark.crawl
def test_scrapy_train_fetches_url_lists_and_skips_failures(job_dir, tmp_path):
    svm_job(job_dir)
    port = free_port()
    pages = {f"/plant{n}.html": Page(f"<html><head><title>Plants</title></head><body>{text}</body></html>")
             for n, text in enumerate(PLANTS[:3])}
    pages |= {f"/off{n}.html": Page(f"<html><body>{text}</body></html>") for n, text in enumerate(BASEBALL + COOKING)}
    with LoopbackWeb({"127.0.0.2": pages}, port=port) as web:
        positive, negative = tmp_path / "positive.txt", tmp_path / "negative.txt"
        positive.write_text("# plants\n" + "".join(web.url("127.0.0.2", p) + "\n" for p in [*pages][:3] + ["/gone.html"]))
        negative.write_text("\n".join(web.url("127.0.0.2", p) for p in [*pages][3:]))
        result = job_dir.scrapy("train", "t", "--positive", str(positive), "--negative", str(negative))

    assert result.returncode == 0, result.stderr
    assert f"skipped {web.url('127.0.0.2', '/gone.html')}: HTTP Error 404" in result.stderr
    assert "trained on 3 positive and 6 negative examples" in result.stdout
    assert "no cross-validation: it needs at least 5 examples of each kind" in result.stdout
    model = load_model(job_dir.topics / "t" / MODEL_FILE)
    assert SvmClassifier(model).classify(UNSEEN_PLANT).relevant


@pytest.mark.crawl
def test_scrapy_train_errors_are_one_line_and_exit_2(job_dir, tmp_path):
    svm_job(job_dir)
    result = job_dir.scrapy("train", "nojob", "--positive", str(tmp_path), "--negative", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr == f"error: {job_dir.topics / 'nojob'}: no such job; known jobs: t\n"
    assert not (job_dir.topics / "nojob").exists()


def test_unusable_example_sources_say_what_is_wrong(tmp_path):
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "only-numbers.txt").write_text("1 2 3")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    cases = [
        ([], "no positive examples in nothing (give --positive FOLDER or --positive URL-LIST)"),
        ([tmp_path / "examples"], f"no positive examples in {tmp_path / 'examples'}"),
        ([tmp_path / "missing"], f"{tmp_path / 'missing'}: no such folder or URL list"),
        ([tmp_path / "latin1.txt"], f"{tmp_path / 'latin1.txt'}: not a folder, and not a UTF-8 list of URLs"),
    ]
    for sources, message in cases:
        with pytest.raises(ExampleError) as raised:
            read_examples([str(source) for source in sources], "positive", "test")
        assert str(raised.value).startswith(message)
