"""doAnalyse: the language of a text and the country of a web server, both worked out offline."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import PROJECT

from combine_scrapy.document.analyse import MIN_LETTERS, Analysis, analyse, country_of_host, language_of

PARAGRAPHS = {
    "en": "The sundews are one of the largest genera of carnivorous plants. Their leaves are covered in "
    "glands that carry drops of sticky mucilage, which glisten in the sun and lure insects looking for "
    "nectar. Once an insect is caught, the tentacles slowly bend over it and digest it.",
    "de": "Der Sonnentau ist eine der größten Gattungen fleischfressender Pflanzen. Seine Blätter sind mit "
    "Drüsen bedeckt, die Tropfen eines klebrigen Schleims tragen. Sobald sich ein Insekt darin verfängt, "
    "krümmen sich die Tentakel langsam darüber und verdauen es im Laufe einiger Tage.",
    "sv": "Sileshår är ett av de största släktena bland köttätande växter. Bladen är täckta av körtlar med "
    "droppar av klibbigt slem som glittrar i solen och lockar till sig insekter. När en insekt har fastnat "
    "böjer sig tentaklerna långsamt över den och bryter ner den under några dagar.",
    "fr": "Les droséras forment l'un des plus grands genres de plantes carnivores. Leurs feuilles sont "
    "couvertes de glandes portant des gouttes d'un mucilage collant qui brillent au soleil et attirent "
    "les insectes. Une fois la proie prise, les tentacules se replient lentement sur elle.",
    "es": "Las droseras son uno de los géneros más grandes de plantas carnívoras. Sus hojas están cubiertas "
    "de glándulas con gotas de un mucílago pegajoso que brillan al sol y atraen a los insectos. Cuando un "
    "insecto queda atrapado, los tentáculos se doblan lentamente sobre él y lo digieren.",
    "zh-cn": "茅膏菜属是食虫植物中最大的属之一。它的叶子上长满了腺毛，腺毛顶端带有黏液滴，在阳光下闪闪发光，"
    "吸引寻找花蜜的昆虫。一旦昆虫被粘住，触毛就会慢慢弯曲把它包住，并在几天之内把它消化掉。",
    "ru": "Росянка — один из крупнейших родов хищных растений. Её листья покрыты железками с каплями липкой "
    "слизи, которые блестят на солнце и привлекают насекомых. Когда насекомое прилипает, щупальца медленно "
    "загибаются над ним и за несколько дней переваривают добычу.",
}


@pytest.mark.parametrize("language", PARAGRAPHS)
def test_language_of_a_paragraph(language):
    assert language_of(PARAGRAPHS[language]) == language


def test_language_is_the_same_on_every_call():
    mixed = PARAGRAPHS["sv"][:120] + " " + PARAGRAPHS["de"][:120]
    assert len({language_of(mixed) for _ in range(5)}) == 1


@pytest.mark.parametrize("text", ["", "Sundews", "Home | About | Contact", "2024-06-01 12:00 404 500 200 42", "drosera " * 3])
def test_short_or_letterless_text_gives_no_language(text):
    assert language_of(text) is None


def test_language_needs_the_minimum_number_of_letters():
    words = PARAGRAPHS["en"].split()
    short = " ".join(words[:6])
    assert sum(ch.isalpha() for ch in short) < MIN_LETTERS
    assert language_of(short) is None
    assert language_of(" ".join(words[:20])) == "en"


@pytest.mark.parametrize(
    ("host", "country"),
    [
        ("www.example.se", "SE"),
        ("www.bbc.co.uk", "GB"),
        ("gov.uk", "GB"),
        ("shop.example.de", "DE"),
        ("Example.FR.", "FR"),
        ("example.com.au", "AU"),
        ("example.com", None),
        ("example.org", None),
        ("example.eu", None),  # a region, not a country
        ("127.0.0.1", None),
        ("::1", None),
        ("[2001:db8::1]", None),
        ("localhost", None),
        ("intranet.invalid", None),
        ("", None),
    ],
)
def test_country_from_the_country_code_domain(host, country):
    assert country_of_host(host) == country


def test_analyse_reads_the_host_of_the_url():
    assert analyse("http://www.example.se:8080/växter?x=1", PARAGRAPHS["sv"]) == Analysis("sv", "SE")
    assert analyse("https://127.0.0.2:8931/", "Home") == Analysis(None, None)


NO_NETWORK = """
import socket

def refuse(*args, **kwargs):
    raise AssertionError("network access attempted")

socket.socket.connect = socket.socket.connect_ex = refuse
socket.create_connection = socket.getaddrinfo = refuse

from combine_scrapy.document.analyse import country_of_host
print(country_of_host("www.bbc.co.uk"), country_of_host("example.se"), country_of_host("example.com"))
"""


@pytest.mark.crawl
def test_country_lookup_never_touches_the_network(tmp_path):
    """A fresh process with every socket refused and an empty home (no cached suffix list) still answers."""
    result = subprocess.run(
        [sys.executable, "-c", NO_NETWORK],
        cwd=PROJECT, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(PROJECT), "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["GB", "SE", "None"]
    assert "network access attempted" not in result.stderr
    assert not any(tmp_path.iterdir())  # nothing cached either
