"""Near-duplicate pages: a 64-bit simhash of a page's text and the Hamming distance between two.

The MD5 content key only finds exact copies. Simhash (Charikar; Manku et al.,
"Detecting near-duplicates for web crawling") maps similar texts to
fingerprints that differ in few bits, so a page that differs from a stored
one only in a date or an advert lands within a small Hamming distance of it.

The features are word shingles; digits are folded to one symbol first, so a
changed date, counter or price changes no shingle at all.

Stores find fingerprints within distance ``k`` without a full scan: cut into
``BANDS`` bands of 16 bits, two fingerprints at distance ``k <= 3`` agree on
at least one whole band (pigeonhole). Looking each band up also with every
one of its bits flipped (17 values a band) widens that to ``k <= 7``: two
fingerprints that close differ in at most one bit of some band.

How far a small change moves the fingerprint depends on the page's length:
in a simulation with 200-word pages, a changed advert of ten words stayed
within 3 bits in 1 case of 5 and within 7 bits in 3 of 4, on 800-word pages
in 2 of 3 and 49 of 50, while different pages of one site template stayed 14
or more bits apart. So pages are fingerprinted by their main content block
(adverts and navigation outside it change nothing), the default distance is
the literature's 3, and a job may widen it to 7 (nearDuplicateDistance).
Text generated from a small grammar is another matter: different pages of the
benchmarks' virtual web share most of their shingles, and 58 of the 44,850
pairs of its first 300 pages came within 3 bits.
"""

from __future__ import annotations

import hashlib
import re

import numpy

BITS = 64
BANDS = 4
BAND_BITS = BITS // BANDS
#: The largest distance the band lookup finds every match for: with one flipped bit probed per band, 2 * BANDS - 1.
MAX_DISTANCE = 2 * BANDS - 1
#: The distance within which a page counts as a near-duplicate unless the job says otherwise (Manku et al.'s k).
DEFAULT_DISTANCE = 3
#: Words per shingle.
SHINGLE = 3
#: Texts with fewer words get no fingerprint: too few shingles to tell a near-duplicate from a different page.
MIN_WORDS = 20

_WORD = re.compile(r"\w+", re.UNICODE)
# For ASCII text: word characters lower-cased, any other a space.
_ASCII_WORDS = bytes(
    ord(char.lower()) if char.isascii() and (char.isalnum() or char == "_") else ord(" ") for char in map(chr, range(256))
)
_DIGITS = re.compile(r"\d+")
_MASK = (1 << BITS) - 1
#: Distinct words whose hashes are remembered across pages (about 100 bytes each).
WORD_CACHE = 200_000


def words(text: str) -> list[str]:
    """Lower-cased words, every run of digits folded to ``0``.

    Digits are word characters, so folding them in the whole text first
    moves no word boundary: one substitution a page instead of one a word.
    ASCII text is then cut through a byte table (``\\w`` is ``[A-Za-z0-9_]``
    there), several times faster than finding each word with the expression.
    """
    if text.isascii():
        return _DIGITS.sub("0", text).encode("ascii").translate(_ASCII_WORDS).decode("ascii").split()
    return _WORD.findall(_DIGITS.sub("0", text.lower()))


def _hash64(feature: str) -> int:
    return int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "big")


def _word_hash(word: str, cache: dict[str, int] = {}) -> int:  # noqa: B006 - the cache is the point
    """``_hash64(word)``, remembered: the pages of one crawl share most of their words."""
    value = cache.get(word)
    if value is None:
        if len(cache) >= WORD_CACHE:
            cache.clear()
        value = cache[word] = _hash64(word)
    return value


def _mix(values: numpy.ndarray) -> numpy.ndarray:
    """splitmix64's finalizer: every input bit moves about half the output bits."""
    values = (values ^ (values >> numpy.uint64(30))) * numpy.uint64(0xBF58476D1CE4E5B9)
    values = (values ^ (values >> numpy.uint64(27))) * numpy.uint64(0x94D049BB133111EB)
    mixed: numpy.ndarray = values ^ (values >> numpy.uint64(31))
    return mixed


def shingle_hashes(tokens: list[str], size: int = SHINGLE) -> numpy.ndarray:
    """A 64-bit hash of every run of ``size`` words.

    Each distinct word is hashed once (blake2b, stable across processes, and
    remembered across pages); a shingle's hash mixes its words' hashes with
    their positions, in numpy, so a page costs a dictionary look-up per word
    of its vocabulary, not a hash call per shingle.
    """
    vocabulary = {word: number for number, word in enumerate(dict.fromkeys(tokens))}
    distinct = numpy.fromiter(map(_word_hash, vocabulary), dtype=numpy.uint64, count=len(vocabulary))
    word_hashes = distinct[numpy.fromiter(map(vocabulary.__getitem__, tokens), dtype=numpy.intp, count=len(tokens))]
    count = len(tokens) - size + 1
    combined = numpy.zeros(count, dtype=numpy.uint64)
    with numpy.errstate(over="ignore"):
        for position in range(size):
            combined = _mix(combined ^ word_hashes[position:position + count] ^ numpy.uint64(position + 1))
    return combined


def simhash(text: str) -> int | None:
    """The 64-bit simhash of ``text`` over its word shingles; None below MIN_WORDS words.

    Each bit is the majority vote of that bit over the hashes of all shingles,
    each shingle counted as often as it occurs.
    """
    tokens = words(text)
    if len(tokens) < MIN_WORDS:
        return None
    hashes = shingle_hashes(tokens).astype(">u8")
    ones = numpy.unpackbits(hashes.view(numpy.uint8).reshape(-1, 8), axis=1).sum(axis=0)  # most significant bit first
    fingerprint = 0
    for set_bits in ones:
        fingerprint = fingerprint << 1 | int(2 * int(set_bits) > len(hashes))
    return fingerprint


def page_fingerprint(text: str, main_text: str | None = None) -> int | None:
    """The simhash of a page's main content block when that has MIN_WORDS words, else of all its text.

    Navigation, adverts and other boilerplate outside the main block then
    move the fingerprint not at all.
    """
    main = simhash(main_text) if main_text else None
    return main if main is not None else simhash(text)


def distance(a: int, b: int) -> int:
    """Hamming distance: in how many of the 64 bits two fingerprints differ."""
    return ((a ^ b) & _MASK).bit_count()


def bands(fingerprint: int) -> tuple[int, ...]:
    """The fingerprint cut into BANDS values of BAND_BITS bits, lowest band first."""
    mask = (1 << BAND_BITS) - 1
    return tuple(fingerprint >> (band * BAND_BITS) & mask for band in range(BANDS))


def probes(fingerprint: int) -> list[tuple[int, ...]]:
    """For each band, the values to look up: the band's own and its BAND_BITS one-bit neighbours.

    Every fingerprint within MAX_DISTANCE shows one of them in at least one band.
    """
    return [(value, *(value ^ 1 << bit for bit in range(BAND_BITS))) for value in bands(fingerprint)]


def to_signed(fingerprint: int) -> int:
    """The fingerprint as a signed 64-bit integer, the one integer type SQLite and MySQL share."""
    return fingerprint - (1 << BITS) if fingerprint >> (BITS - 1) else fingerprint


def to_unsigned(value: int) -> int:
    return value & _MASK
