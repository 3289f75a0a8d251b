"""The online link classifier: a model of which links lead to relevant pages, learned from the crawl itself.

The topic definition decides whether a fetched page is relevant; this model
ranks the links not fetched yet (ACHE's online link classifier, with the
path credit of context-graph and reinforcement-learning crawlers). A link is
described by hashed features: the words of its anchor (and title attribute),
the words around it on its page, the tokens of its URL (and whether its path
names a language), how much the topic's terms are in those (the link's topic
relevance, as the prior counts it), the linking page's verdict and score, how
many links it is from the last relevant page, and whether it stays on its page's host; nothing
of its target host, whose share of the fetches is the crawl strategy's. The label of a link is known when its target has been fetched
and classified, so the features of links not fetched yet wait in a bounded
LRU keyed by canonical URL (canonicalized as the frontier does); on
:meth:`OnlineLinkLearner.observe` the link learns "relevant" or "not", and a
relevant page also credits the links that led to it through irrelevant pages,
``CREDIT_DECAY`` less for each hop back, so directory links in front of the
topic learn that they lead there.

The model is a logistic regression over a fixed hashed feature space
(``FEATURE_BITS``), trained one example at a time with AdaGrad: deterministic
(no random choice at all: zero start, examples in the order of the fetches),
and scoring a page of 200 links takes a few array operations. It is stored
as a compressed numpy archive (never a pickle, so a model read from a shared
Redis cannot run code): ``data/<job>/link_model.npz`` beside the SQLite
frontier, or the Redis key ``combine:{job}:link_model`` beside the Redis
frontier. Harvesters sharing a Redis merge by adding what each learned: every
``SYNC_EVERY`` observations a harvester adds its change since the last sync
to the stored model in one optimistic transaction and continues from the
sum (asynchronous SGD through a parameter server). Pure code: no Scrapy.
"""

from __future__ import annotations

import fcntl
import io
import math
import os
import re
import zlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np

from combine_scrapy.access.urls import UrlChecker, UrlRules, host_of

if TYPE_CHECKING:
    import redis
    from redis.cluster import RedisCluster

#: log2 of the hashed feature space: 262,144 weights, 1 MB, ample for the words of one crawl.
FEATURE_BITS = 18
#: AdaGrad's step size, and the L2 pull towards 0 that keeps rare words' weights small.
LEARNING_RATE = 0.3
L2 = 1e-6
#: A relevant page credits the link into each irrelevant page before it this much less per hop.
CREDIT_DECAY = 0.7
#: Links whose targets are not fetched yet, and irrelevant fetched pages (for the path credit), kept at most.
PENDING_LINKS = 50_000
FETCHED_PAGES = 20_000
#: The model ranks links only after this many relevant and irrelevant targets; its share then grows
#: with the relevant ones up to LEARNED_WEIGHT at FULL_WEIGHT_POSITIVES.
MIN_POSITIVES = 5
MIN_NEGATIVES = 5
FULL_WEIGHT_POSITIVES = 25
LEARNED_WEIGHT = 0.75
#: Observations between two merges of the model with the stored one.
SYNC_EVERY = 100
#: Observations between two re-scorings of the links waiting in the frontier, once the model has a share: at
#: least RESCORE_EVERY, and one more for every RESCORE_WAITING links waiting (a re-scoring costs a little per
#: waiting link, so its share of the crawl's time stays bounded as the frontier grows).
RESCORE_EVERY = 50
RESCORE_WAITING = 100
#: ... and one more for every RESCORE_HOSTS hosts the last re-scoring wrote priorities of: the frontier's work for a
#: re-scoring goes by host (a host's URLs are read and written with a few Redis commands, then its place among the
#: heads), so its share of the frontier's work a page stays bounded where hosts have few waiting URLs each.
RESCORE_HOSTS = 2
#: A re-scored link whose priority moved less than this keeps the priority it has in the frontier (not written).
#: (A relative tolerance of 10% as well cut the links written by 10-30% but not the hosts, which Redis's cost
#: follows, and measured worse on the real-site benchmark: regex from an off-topic page 916-928 fetches to 80% of
#: its targets, or never, against 435-689 without it.)
RESCORE_TOLERANCE = 0.005
#: Words of the text around a link, and URL tokens, used at most.
CONTEXT_WORDS = 20
URL_TOKENS = 16
#: Within a host that has given a new relevant page, a link's priority gains HOST_DEPTH_BONUS * HOST_DEPTH_DECAY **
#: depth, ``depth`` being the links from where the crawl entered the host (0: a seed, or a page found on another
#: host): the index and contents pages near a productive host's entry come before its deep pages the model knows
#: nothing of, as a breadth-first walk of the host would take them. A documentation site's pages on a topic sit under
#: such hubs, 2-3 links from its home page. Hosts that gave nothing get no bonus, so the share of the fetches among
#: hosts stays the strategy's and a generated web's barren sites are not walked breadth-first.
HOST_DEPTH_BONUS = 0.2
HOST_DEPTH_DECAY = 0.5
#: Pages whose depth in their host is remembered at most; past it the memory starts again.
HOST_DEPTHS = 200_000
#: A link to a page whose name says that it lists a site's pages (``index.html``, ``contents.html``, ``toc``,
#: ``sitemap``) gains HUB_BONUS on its priority, from the first fetch: a hub's anchors name the pages under it, so
#: its links can be judged by their topic terms, where the model knows nothing yet of the site. Not in a path that
#: names a language: a translated site's hubs, one a language, lead mostly to copies.
HUB_BONUS = 0.2
HUB_NAMES = frozenset({"index", "contents", "toc", "sitemap"})
#: A link to a page the crawl has already seen in another language (its URL, the language taken out of its path, is
#: that of a link seen before: ``/fr/ssl/howto.html`` after ``/en/ssl/howto.html``) keeps LANGUAGE_COPY_SHARE of its
#: priority: a translation tells the same as the page the crawl has or will have, and the crawl looks for topics, not
#: languages. Translated text is a new record to the record store, so the crawl cannot learn this from duplicates;
#: the first language seen of each page keeps its whole priority, so a crawl that starts in French stays in French.
LANGUAGE_COPY_SHARE = 0.25
#: Language-free paths whose first URL is remembered at most; past it the memory starts again.
LANGUAGE_COPIES = 200_000
#: Fetched and classified URLs remembered at most (the oldest forgotten first): a link found later to one of them is
#: not kept waiting for a lesson (the frontier does not fetch it again).
OBSERVED_PAGES = 200_000
#: Features named in a stored model at most (the strongest), for ``scrapy report``.
NAMED_FEATURES = 200
MODEL_FILE = "link_model.npz"
MODEL_KEY = "link_model"
FORMAT_VERSION = 3  # 3: the topic terms feature; 2: no host features (1 had them); hashed indices differ

#: Language codes (ISO 639-1 and common regional forms) as translated sites put them in their paths. A link
#: whose path names one gets the feature LANGUAGE_FEATURE besides its URL tokens: what the crawl learns of one
#: language's copies (duplicates teach a negative lesson) carries over to the others.
LANGUAGE_CODES = frozenset(
    "ar bg bn ca cs da de el en eo es et eu fa fi fr ga gl he hi hr hu id it ja ka ko lt lv mk ms nb nl nn no pl "
    "pt ro ru sk sl sq sr sv ta th tr uk vi zh zh-cn zh-tw zh-hans zh-hant pt-br pt-pt en-us en-gb es-es es-mx "
    "fr-fr de-de ja-jp ko-kr it-it nl-nl ru-ru".split()
)
LANGUAGE_FEATURE = "u:@language"

# Fixed features with a value, before the hashed ones.
_NUMERIC = ("bias", "page_relevant", "page_score", "same_host", "topic_terms")
_N_NUMERIC = len(_NUMERIC)
_WORD = re.compile(r"[^\W_]+")
_SIZE = 1 << FEATURE_BITS
_CANONICAL_CACHE = 100_000


#: Each feature's index, as hashed lately (cleared when it grows past 2**18): the hashing's cache, and what names
#: a weight for ``scrapy report``.
_FEATURE_INDEX: dict[str, int] = {}


def _hashed(feature: str) -> int:
    index = _FEATURE_INDEX.get(feature)
    if index is None:
        if len(_FEATURE_INDEX) > 1 << 18:
            _FEATURE_INDEX.clear()
        index = _FEATURE_INDEX[feature] = (
            _N_NUMERIC + zlib.crc32(feature.encode("utf-8", "surrogatepass")) % (_SIZE - _N_NUMERIC)
        )
    return index


def words(text: str) -> list[str]:
    """Lower-cased letter and digit runs: numbers stay (a section number or module code names a topic too)."""
    return _WORD.findall(text.lower())


@dataclass(frozen=True, slots=True)
class LinkFeatures:
    """One link's features: unique indices into the weights and their values."""

    indices: np.ndarray
    values: np.ndarray


def language_code(word: str) -> bool:
    """Whether ``word`` is a language code as paths write them: one of LANGUAGE_CODES, or a code of two letters with
    a region of two (``da-DK``, ``ca_ES``: the region's letters are not checked)."""
    code = word.lower().replace("_", "-")
    return code in LANGUAGE_CODES or (len(code) == 5 and code[2] == "-" and code[:2] in LANGUAGE_CODES
                                      and code[3:].isalpha())


def language_free(path: str) -> str | None:
    """The URL path without the language it names, the way translated sites name it: a segment that is a language
    code (``fr/mod/core.html`` -> ``mod/core.html``, also ``pt-br``, ``zh_CN``, ``da-DK``) or a file suffix
    (``index.html.de``, ``page.ja.html`` -> ``index.html``, ``page.html``); None when it names none."""
    kept, named = [], False
    for segment in path.split("/"):
        if language_code(segment):
            named = True
            continue
        parts = segment.split(".")
        if len(parts) > 2 and any(language_code(part) for part in parts[1:]):
            named = True
            segment = ".".join(parts[:1] + [part for part in parts[1:] if not language_code(part)])
        kept.append(segment)
    return "/".join(kept) if named else None


def language_variant(path: str) -> bool:
    """Whether a URL path names a language the way translated sites do (``language_free``)."""
    return language_free(path) is not None


def hub_page(url: str) -> bool:
    """Whether a URL's last path segment, before its first dot, is one of HUB_NAMES (``/library/index.html``)
    and its path names no language (``/fr/mod/index.html`` is not a hub here)."""
    path = url.split("://", 1)[-1].partition("/")[2].partition("?")[0].partition("#")[0]
    name = path.rstrip("/").rpartition("/")[2].partition(".")[0].lower()
    return name in HUB_NAMES and not language_variant(path)


def link_features(*, anchor: str, context: str, url: str, host: str, source_host: str, page_relevant: bool,
                  page_evidence: float, distance: int, topic_terms: float = 0.0) -> LinkFeatures:
    """The features of one link (see the module's docstring); each group of words weighs 1 in all.

    ``topic_terms`` is the link's topic relevance in [0, 1) (the topic's terms in its anchor, title, URL and the
    words around it): the model learns how much it says on this crawl, and carries it to words it has not seen.

    Nothing of the target's host is a feature: which hosts deserve fetches is the crawl strategy's (BestFirst
    shares them by each host's yield). A host feature would rank all of a productive host's links above every
    other host's and, with the strategy's own host weight, let one host starve the rest.
    """
    values: dict[int, float] = {0: 1.0, 1: float(page_relevant), 2: page_evidence, 3: float(host == source_host),
                                4: topic_terms}
    anchor_words = words(anchor)
    path = url.split("://", 1)[-1].partition("/")[2]
    url_tokens = [f"u:{token}" for token in words(path)[:URL_TOKENS]]
    if language_variant(path):
        url_tokens.append(LANGUAGE_FEATURE)
    groups = (
        [f"a:{word}" for word in anchor_words] + [f"a2:{a} {b}" for a, b in zip(anchor_words, anchor_words[1:])],
        [f"c:{word}" for word in words(context)[:CONTEXT_WORDS]],
        url_tokens,
        [f"d:{min(distance, 8)}", f"dr:{min(distance, 8)}:{int(page_relevant)}"],
    )
    for group in groups:
        if group:
            weight = 1.0 / math.sqrt(len(group))
            for feature in group:
                index = _hashed(feature)
                values[index] = values.get(index, 0.0) + weight
    return LinkFeatures(np.fromiter(values.keys(), np.int32, len(values)),
                        np.fromiter(values.values(), np.float32, len(values)))


_FEATURE_KINDS = {"a": "anchor", "a2": "anchor words", "c": "words around", "u": "URL",
                  "d": "links from the last relevant page", "dr": "distance:page relevant"}


def describe_feature(feature: str) -> str:
    """A named feature as a person reads it: ``URL: fr``, ``anchor: sundews``, ``the link's page was relevant``."""
    if feature == LANGUAGE_FEATURE:
        return "URL names a language"
    if feature.startswith("#"):
        return {"#bias": "every link", "#page_relevant": "the link's page was relevant",
                "#page_score": "the link's page's score",
                "#same_host": "the link stays on its host",
                "#topic_terms": "the topic's terms in the link"}.get(feature, feature[1:])
    kind, _, value = feature.partition(":")
    return f"{_FEATURE_KINDS.get(kind, kind)}: {value}"


class LinkModel:
    """Logistic regression over hashed features, trained online with AdaGrad."""

    def __init__(self, bits: int = FEATURE_BITS):
        self.bits = bits
        self.weights = np.zeros(1 << bits, np.float32)
        self.squares = np.zeros(1 << bits, np.float32)  # AdaGrad: summed squared gradients per weight
        self.counts = np.zeros(3, np.int64)  # examples, relevant targets, irrelevant targets
        #: The feature behind some weights (the strongest, named when a crawl ends), for ``scrapy report``.
        self.names: dict[int, str] = {}

    def top_features(self, count: int) -> list[tuple[str, float]]:
        """The named features with the largest weights, strongest first: ``(feature, weight)``."""
        return [(name, float(self.weights[index])) for index, name in self.top_features_by_index(count)]

    @property
    def positives(self) -> int:
        return int(self.counts[1])

    @property
    def negatives(self) -> int:
        return int(self.counts[2])

    def predict(self, batch: list[LinkFeatures]) -> np.ndarray:
        """The probability that each link leads to a relevant page."""
        if not batch:
            return np.zeros(0)
        indices = np.concatenate([f.indices for f in batch])
        values = np.concatenate([f.values for f in batch])
        starts = np.cumsum([0] + [len(f.indices) for f in batch[:-1]])
        z: np.ndarray = np.add.reduceat(self.weights[indices] * values, starts)
        probabilities: np.ndarray = 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))
        return probabilities

    def learn(self, features: LinkFeatures, target: float, weight: float = 1.0) -> None:
        """One AdaGrad step of the log loss towards ``target`` (1: leads to a relevant page, 0: not), the loss
        multiplied by ``weight`` (a lesson that counts more)."""
        indices, values = features.indices, features.values
        weights = self.weights[indices]
        p = 1.0 / (1.0 + math.exp(-max(min(float(weights @ values), 30.0), -30.0)))
        gradient = weight * (p - target) * values + L2 * weights
        squares = self.squares[indices] + gradient * gradient
        self.squares[indices] = squares
        self.weights[indices] = weights - LEARNING_RATE * gradient / (np.sqrt(squares) + 1e-7)
        self.counts[0] += 1
        if target >= 1.0:
            self.counts[1] += 1
        elif target <= 0.0:
            self.counts[2] += 1

    def copy(self) -> LinkModel:
        other = LinkModel(self.bits)
        other.weights, other.squares, other.counts = self.weights.copy(), self.squares.copy(), self.counts.copy()
        other.names = dict(self.names)
        return other

    def add_change(self, now: LinkModel, before: LinkModel) -> None:
        """Add what ``now`` learned since ``before`` (another harvester's work) to this model."""
        self.weights += now.weights - before.weights
        self.squares += now.squares - before.squares
        self.counts += now.counts - before.counts
        self.names.update(now.names)
        if len(self.names) > NAMED_FEATURES:
            self.names = dict(self.top_features_by_index(NAMED_FEATURES))

    def top_features_by_index(self, count: int) -> list[tuple[int, str]]:
        return sorted(self.names.items(), key=lambda item: -abs(float(self.weights[item[0]])))[:count]

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        np.savez_compressed(buffer, version=np.array([FORMAT_VERSION, self.bits]), weights=self.weights,
                            squares=self.squares, counts=self.counts,
                            name_index=np.fromiter(self.names.keys(), np.int64, len(self.names)),
                            names=np.array(list(self.names.values()), dtype=str))
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> LinkModel:
        """A stored model; ValueError when it is damaged or of another format."""
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as archive:
                version, bits = (int(v) for v in archive["version"])
                if version != FORMAT_VERSION:
                    raise ValueError(f"link model format {version}, expected {FORMAT_VERSION}")
                model = cls(bits)
                model.weights, model.squares = archive["weights"], archive["squares"]
                model.counts = archive["counts"]
                if "names" in archive.files:  # models saved before features were named have none
                    model.names = dict(zip(archive["name_index"].tolist(), archive["names"].tolist()))
        except (OSError, KeyError, EOFError, zlib.error) as e:
            raise ValueError(f"not a link model: {e}") from e
        if model.weights.shape != (1 << bits,) or model.squares.shape != (1 << bits,) or model.counts.shape != (3,):
            raise ValueError("link model arrays have the wrong shape")
        return model


class ModelStore(Protocol):
    """Where the job's link model is kept; ``update`` reads, changes and writes it in one atomic step."""

    location: str

    def read(self) -> bytes | None: ...

    def update(self, change: Callable[[bytes | None], bytes]) -> bytes: ...


class FileModelStore:
    """``data/<job>/link_model.npz``; harvesters on one machine take turns through a lock file."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.location = str(self.path)

    def read(self) -> bytes | None:
        return self.path.read_bytes() if self.path.exists() else None

    def update(self, change: Callable[[bytes | None], bytes]) -> bytes:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            stored = self.path.read_bytes() if self.path.exists() else None
            data = change(stored)
            temporary = self.path.with_name(self.path.name + ".tmp")
            temporary.write_bytes(data)
            os.replace(temporary, self.path)
            return data


class RedisModelStore:
    """One Redis key; concurrent updates are retried (WATCH/MULTI), so no harvester's change is lost."""

    def __init__(self, server: redis.Redis | RedisCluster, key: str) -> None:
        self.server = server
        self.key = key
        self.location = f"redis key {key}"

    def read(self) -> bytes | None:
        return cast("bytes | None", self.server.get(self.key))

    def update(self, change: Callable[[bytes | None], bytes]) -> bytes:
        import redis

        while True:
            with self.server.pipeline(transaction=True) as pipe:  # a Redis Cluster's pipelines need it said
                try:
                    pipe.watch(self.key)
                    # The frontier's client returns bytes (RedisFrontier refuses decode_responses); redis's types cannot tell.
                    data = change(cast("bytes | None", pipe.get(self.key)))
                    pipe.multi()
                    pipe.set(self.key, data)
                    pipe.execute()
                    return data
                except redis.WatchError:
                    continue


@dataclass(frozen=True, slots=True)
class _Link:
    """A link remembered until its target is fetched: its features, the page it was found on, its priority
    before the model's share (``prior``), the priority it was marked with, its target's host and depth there, and
    whether its target is a hub page or a page seen before in another language."""

    features: LinkFeatures
    source: str
    prior: float = 0.0
    priority: float = 0.0
    host: str = ""
    depth: int = 0
    hub: bool = False
    language_copy: bool = False


class OnlineLinkLearner:
    """The model, the links waiting for their label, and the merging with the stored model."""

    def __init__(self, url_rules: UrlRules | None = None, *, credit_hops: int = 6, store: ModelStore | None = None,
                 pending_links: int = PENDING_LINKS, fetched_pages: int = FETCHED_PAGES,
                 url_checker: UrlChecker | None = None):
        self.url_rules = url_rules
        #: Canonical URLs as the frontier keeps them; a crawl shares it with the marking of links (CrawlContext).
        self.url_checker = url_checker or UrlChecker(url_rules, _CANONICAL_CACHE)
        self.credit_hops = credit_hops
        self.store = store
        self.model = LinkModel()
        self._base = self.model.copy()
        self._pending: OrderedDict[str, _Link] = OrderedDict()
        self._fetched: OrderedDict[str, _Link] = OrderedDict()
        #: Every URL observed (fetched and classified), relevant or not.
        self._observed: OrderedDict[str, None] = OrderedDict()
        self._pending_limit, self._fetched_limit = pending_links, fetched_pages
        self._since_sync = 0
        self._since_rescore = 0
        self._rescored_hosts = 0   # hosts the last re-scoring wrote priorities of
        self._host_depths: dict[str, int] = {}
        self._languages: dict[str, str] = {}  # a language-free URL -> the first URL of it seen
        #: Hosts that gave a new relevant page in this harvester: their links get the host depth bonus.
        self.productive_hosts: set[str] = set()

    def canonical(self, url: str) -> str | None:
        """The URL as the frontier keeps it (None: the frontier refuses it); cached, links repeat from page to page."""
        verdict = self.url_checker(url)
        return verdict.url if verdict.ok else None

    @property
    def weight(self) -> float:
        """The model's share of a link's priority: 0 until it has seen enough of both outcomes."""
        model = self.model
        if model.positives < MIN_POSITIVES or model.negatives < MIN_NEGATIVES:
            return 0.0
        return LEARNED_WEIGHT * min(1.0, model.positives / FULL_WEIGHT_POSITIVES)

    def predict(self, batch: list[LinkFeatures]) -> np.ndarray:
        return self.model.predict(batch)

    def host_depth(self, url: str, host: str, source: str, source_host: str) -> int:
        """The (canonical) ``url``'s links from where the crawl entered its host, found on page ``source``: one more
        than the source's on the same host, else 0; the least over the pages it was found on. A page never seen as
        a link's target (a seed) is at 0."""
        depth = self._host_depths.get(source, 0) + 1 if host == source_host else 0
        known = self._host_depths.get(url)
        if known is not None and known <= depth:
            return known
        if len(self._host_depths) >= HOST_DEPTHS:
            self._host_depths.clear()
        self._host_depths[url] = depth
        return depth

    def language_copy(self, url: str) -> bool:
        """Whether the (canonical) ``url`` is a page seen before in another language: a URL whose path names a
        language, another URL of the same path in another language (or none) seen first. The first URL seen of each
        language-free path is remembered, so the answer for a URL never changes (but when the memory starts again)."""
        address, _, path = url.partition("://")[2].partition("/")
        free = language_free(path)
        if free is None:
            return False
        key = f"{address}/{free}"
        first = self._languages.get(key)
        if first is None:
            if len(self._languages) >= LANGUAGE_COPIES:
                self._languages.clear()
            self._languages[key] = first = url
        return first != url

    def bonus(self, host: str, depth: int, hub: bool) -> float:
        """What a link at ``depth`` in ``host`` gains on its priority: HOST_DEPTH_BONUS * HOST_DEPTH_DECAY ** depth
        once the host gave a new relevant page, and HUB_BONUS when it leads to a hub page."""
        bonus = HOST_DEPTH_BONUS * HOST_DEPTH_DECAY ** depth if host in self.productive_hosts else 0.0
        return bonus + HUB_BONUS if hub else bonus

    def remember(self, url: str, features: LinkFeatures, source: str, prior: float = 0.0,
                 priority: float = 0.0, host: str = "", depth: int = 0, hub: bool = False,
                 language_copy: bool = False) -> None:
        """Keep a link's features until its (canonical) target is observed. Of the links found to a URL the
        one marked with the highest priority is kept (the first of equals), as the frontier keeps the highest.
        A link to a page already observed is not kept: it would wait for a lesson that never comes, be re-scored
        at every re-scoring and count among the links the model expects new pages from (``expected_new``)."""
        if url in self._observed:
            return
        kept = self._pending.get(url)
        if kept is not None and kept.priority >= priority:
            return
        self._pending[url] = _Link(features, source, prior, priority, host, depth, hub, language_copy)
        if len(self._pending) > self._pending_limit:
            self._pending.popitem(last=False)

    @property
    def pending(self) -> int:
        return len(self._pending)

    def observe(self, url: str, relevant: bool, weight: float = 1.0) -> int:
        """Learn from the classified fetch of ``url``: its link, and for a relevant page the links on the path
        to it through irrelevant pages; ``weight`` says how much the lesson counts (a page far over the cut-off
        more). ``relevant`` is False for a duplicate of a stored record as for an irrelevant page: both lead
        nowhere new. A relevant page makes its host productive (``bonus``). Returns the number of training
        steps (0: no link to it was seen here)."""
        if relevant:
            self.productive_hosts.add(host_of(url))
        self._observed[url] = None
        if len(self._observed) > OBSERVED_PAGES:
            self._observed.popitem(last=False)
        link = self._pending.pop(url, None)
        if link is None:
            return 0
        self.model.learn(link.features, 1.0 if relevant else 0.0, weight)
        steps = 1
        if relevant:
            source, hop = link.source, 1
            while hop <= self.credit_hops and (before := self._fetched.get(source)) is not None:
                self.model.learn(before.features, CREDIT_DECAY ** hop, weight)
                source, hop, steps = before.source, hop + 1, steps + 1
        else:
            self._fetched[url] = link
            if len(self._fetched) > self._fetched_limit:
                self._fetched.popitem(last=False)
        self._since_sync += 1
        self._since_rescore += 1
        return steps

    @property
    def rescore_due(self) -> bool:
        lessons = max(RESCORE_EVERY, len(self._pending) // RESCORE_WAITING, self._rescored_hosts // RESCORE_HOSTS)
        return self._since_rescore >= lessons and self.weight > 0

    def rescore(self) -> dict[str, float]:
        """New priorities for every link still waiting, from the model as it is now.

        A link is marked with the model of its time: those found before the model learned which links lead to
        the topic (a directory's entries found on the way in) keep their prior alone, and those found early
        keep what an immature model said. Re-scoring them (ACHE re-scores its frontier the same way) lets
        them rise, or sink, with what the crawl has learned since; the links into a host that has become
        productive since they were marked gain its depth bonus (``bonus``). Only the links whose priority moved
        by ``RESCORE_TOLERANCE`` or more are returned (the others' priorities stand: each link remembers the
        priority last given to the frontier)."""
        self._since_rescore = 0
        weight = self.weight
        if not weight or not self._pending:
            return {}
        urls = list(self._pending)
        links = list(self._pending.values())
        probabilities = self.model.predict([link.features for link in links])
        priors = np.fromiter((link.prior for link in links), np.float64, len(links))
        marked = np.fromiter((link.priority for link in links), np.float64, len(links))
        bonuses = np.fromiter((self.bonus(link.host, link.depth, link.hub) for link in links), np.float64, len(links))
        shares = np.fromiter((LANGUAGE_COPY_SHARE if link.language_copy else 1.0 for link in links), np.float64,
                             len(links))
        priorities = shares * np.minimum((1 - weight) * priors + weight * probabilities.astype(np.float64) + bonuses,
                                         1.0)
        rescored = {}
        hosts = set()
        for position in np.flatnonzero(np.abs(priorities - marked) >= RESCORE_TOLERANCE).tolist():
            url, link, priority = urls[position], links[position], float(priorities[position])
            self._pending[url] = _Link(link.features, link.source, link.prior, priority, link.host, link.depth,
                                       link.hub, link.language_copy)
            rescored[url] = priority
            hosts.add(link.host)
        self._rescored_hosts = len(hosts)
        return rescored

    def name_features(self) -> None:
        """Name the model's strongest features it knows the words of (those hashed recently in this process)."""
        strongest = set(np.argsort(-np.abs(self.model.weights))[:NAMED_FEATURES].tolist())
        names = self.model.names
        names.update((index, feature) for feature, index in _FEATURE_INDEX.items() if index in strongest)
        names.update((index, f"#{name}") for index, name in enumerate(_NUMERIC))
        if len(names) > NAMED_FEATURES:
            self.model.names = dict(self.model.top_features_by_index(NAMED_FEATURES))

    def expected_new(self, best: int) -> float | None:
        """The relevant pages the model expects from the ``best`` waiting links it ranks highest (the sum of their
        probabilities); None while the model has no share in the priorities (it has not seen enough)."""
        if not self.weight:
            return None
        if not self._pending:
            return 0.0
        probabilities = self.model.predict([link.features for link in self._pending.values()])
        if len(probabilities) > best:
            probabilities = np.partition(probabilities, len(probabilities) - best)[-best:]
        return float(probabilities.sum())

    @property
    def sync_due(self) -> bool:
        return self.store is not None and self._since_sync >= SYNC_EVERY

    def sync(self) -> None:
        """Merge with the stored model: add this harvester's change since the last sync, continue from the sum.

        The first sync loads what earlier runs and other harvesters learned. A stored model that cannot be read
        is replaced (ValueError is not raised for it: the crawl keeps its own model).
        """
        if self.store is None:
            return
        now, before = self.model, self._base
        damaged: list[str] = []

        def merge(stored: bytes | None) -> bytes:
            shared = LinkModel(now.bits)
            if stored:
                try:
                    shared = LinkModel.from_bytes(stored)
                except ValueError as e:
                    damaged.append(str(e))
                if shared.bits != now.bits:
                    shared = LinkModel(now.bits)
            shared.add_change(now, before)
            return shared.to_bytes()

        merged = LinkModel.from_bytes(self.store.update(merge))
        self.model, self._base, self._since_sync = merged, merged.copy(), 0
        if damaged:
            raise DamagedModel(f"{self.store.location}: {damaged[0]}; replaced by this harvester's model")


class DamagedModel(ValueError):
    """The stored link model could not be read; it was replaced."""

