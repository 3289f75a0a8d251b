"""The focus web's topics (definition, vocabulary, passing mentions) and its off-topic vocabularies.

Each topic's pages are written from its own vocabulary, whose every subject
names a term of the topic's definition, so a topical page scores far above
the cut-off. Off-topic vocabularies contain no term of any topic; an
off-topic page may carry one passing mention, a single term of weight <= 50,
which stays under Combine's cut-off of 90. Anchors to topical pages are
codes (``TN-4.2``, ``§ 3.1``, ``mod_kq``) that name no term.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.virtualweb.vocabulary import VOCABULARIES as VIRTUALWEB_VOCABULARIES
from bench.virtualweb.vocabulary import Vocabulary


@dataclass(frozen=True)
class Topic:
    key: str  # the job name: focus-<key>
    name: str
    definition: str  # topicdefinition.txt, Combine's grammar
    vocabulary: Vocabulary
    mentions: tuple[str, ...]  # one sentence, one term of weight <= 50: under the cut-off


TOPICS: tuple[Topic, ...] = (
    Topic(
        key="glaciers",
        name="glaciers and ice sheets",
        definition="""\
# Glaciology: glaciers and ice sheets. WEIGHT: TERMS=CLASS-LIST (Combine's grammar).
100: glaciers?=GL
60: glaciology=GL
50: ice sheets?=GL
50: ice shel(f|ves)=GL.Shelf
40: crevasses?=GL.Dynamics
40: moraines?=GL.Landforms
40: firn=GL.Mass
30: ablation=GL.Mass
30: calving=GL.Dynamics
30: icefields?=GL
""",
        vocabulary=Vocabulary(
            name="glaciology",
            subjects=(
                "The glacier", "The outlet glacier", "Valley glaciers", "The ice sheet", "The ice shelf",
                "Crevasse fields", "The terminal moraine", "Lateral moraines", "The firn layer", "Firn cores",
                "Ablation rates", "The calving front", "Tidewater glaciers", "The icefield", "Glaciology surveys",
            ),
            verbs=("advance over", "retreat from", "thin above", "flow into", "reshape", "record", "depend on",
                   "respond to", "erode", "feed"),
            objects=(
                "the bedrock trough", "meltwater channels", "summer air temperatures", "the grounding line",
                "winter snowfall", "the fjord", "basal sliding", "the equilibrium line", "debris cover",
                "the surface mass balance",
            ),
            qualifiers=(
                "over the last decade", "in the satellite record", "during the melt season", "in the field survey",
                "at high altitude", "in the borehole data", "near the margin", "in the model runs",
            ),
            title_subjects=(
                "Outlet glaciers", "Ice sheet dynamics", "Ice shelf stability", "Crevasse mapping",
                "Moraine dating", "Firn densification", "Ablation stakes", "Calving fronts", "Glacier inventory",
            ),
            title_aspects=("field notes", "method", "data set", "observations", "model results", "overview",
                           "measurements", "case study"),
        ),
        mentions=(
            "A photograph of a crevasse hangs in the meeting room.",
            "The winter outing went to a moraine above the lake.",
            "Our logo was drawn after an old ice sheet map.",
            "One of the engineers once measured ablation on a summer job.",
        ),
    ),
    Topic(
        key="bees",
        name="beekeeping",
        definition="""\
# Beekeeping and honey bees. WEIGHT: TERMS=CLASS-LIST (Combine's grammar).
100: beekeeping=BK
80: beekeepers?=BK
60: honey ?bees?=BK
50: apiar(y|ies)=BK.Apiary
50: beehives?=BK.Apiary
40: varroa=BK.Health
40: brood combs?=BK.Colony
30: propolis=BK.Products
30: queen bees?=BK.Colony
30: nectar flow=BK.Forage
""",
        vocabulary=Vocabulary(
            name="beekeeping",
            subjects=(
                "The beekeeper", "Honey bees", "The apiary", "Every beehive", "The honeybee colony",
                "Varroa mites", "The brood comb", "Propolis", "The queen bee", "Beekeeping clubs",
                "Experienced beekeepers", "The nectar flow", "A strong honeybee swarm",
            ),
            verbs=("need", "collect", "store", "defend", "build", "tolerate", "rely on", "produce", "inspect",
                   "survive"),
            objects=(
                "a dry wintering site", "oxalic acid treatment", "sugar syrup in autumn", "fresh foundation",
                "clover and lime trees", "a ventilated roof", "capped cells", "a queen excluder",
                "spring pollen", "the entrance reducer",
            ),
            qualifiers=(
                "in early spring", "after the main harvest", "on warm afternoons", "during the swarming season",
                "in a cold winter", "at the club apiary", "before the frost", "in the first year",
            ),
            title_subjects=(
                "Beekeeping basics", "Honey bee health", "Apiary planning", "Beehive design", "Varroa control",
                "Brood comb care", "Propolis harvest", "Queen bee rearing", "Nectar flow forecasts",
            ),
            title_aspects=("a guide", "checklist", "season notes", "best practice", "course notes", "questions",
                           "handbook", "trial results"),
        ),
        mentions=(
            "A neighbour keeps a beehive at the end of the car park.",
            "The canteen sells honey from an apiary nearby.",
            "Staff may join a course on propolis at the community centre.",
            "The park's varroa survey needs volunteers this summer.",
        ),
    ),
    Topic(
        key="fibre",
        name="optical fibre and photonics",
        definition="""\
# Optical fibre and photonics. WEIGHT: TERMS=CLASS-LIST (Combine's grammar).
100: optical fib(re|er)s?=OF
80: fib(re|er) optics?=OF
60: photonics=OF
50: waveguides?=OF.Guides
40: refractive index=OF.Physics
40: chromatic dispersion=OF.Physics
30: fusion splic(e|es|ing)=OF.Install
30: laser diodes?=OF.Sources
30: single-mode=OF
""",
        vocabulary=Vocabulary(
            name="photonics",
            subjects=(
                "The optical fibre", "Single-mode optical fibres", "Fibre optic links", "The waveguide",
                "Planar waveguides", "The refractive index profile", "Chromatic dispersion", "Fusion splicing",
                "The laser diode", "Photonics modules", "Fibre optics networks", "Multicore optical fibres",
            ),
            verbs=("carry", "limit", "lose", "couple into", "shift", "tolerate", "compensate for", "depend on",
                   "guide", "broaden"),
            objects=(
                "short pulses", "a few decibels per kilometre", "the cladding", "the connector loss",
                "the C band", "high bit rates", "bend losses", "the splice tray", "thermal drift",
                "the receiver",
            ),
            qualifiers=(
                "over long spans", "in the lab bench test", "at 1550 nanometres", "after ageing",
                "in the field trial", "under tension", "in dense networks", "at low temperature",
            ),
            title_subjects=(
                "Optical fibre basics", "Waveguide design", "Refractive index profiles", "Chromatic dispersion",
                "Fusion splicing", "Laser diode drivers", "Photonics packaging", "Single-mode links",
            ),
            title_aspects=("application note", "test report", "tutorial", "specification", "design notes",
                           "measurements", "troubleshooting", "reference"),
        ),
        mentions=(
            "The new lab bought a laser diode for its barcode scanner.",
            "A museum talk on the refractive index of glass is on the events page.",
            "The new office has a waveguide sculpture in its lobby.",
            "A cable crew tested a fusion splice outside the depot.",
        ),
    ),
)

#: Off-topic themes of sites, from the virtual web (baseball, cooking, motoring, finance, music, travel).
THEMES: tuple[Vocabulary, ...] = tuple(
    vocabulary for vocabulary in VIRTUALWEB_VOCABULARIES if vocabulary.name not in ("carnivorous plants", "site")
)

#: What every site's sections are written with, whatever the site's theme.
CORPORATE: dict[str, Vocabulary] = {
    "products": Vocabulary(
        name="products",
        subjects=("The new model", "This product", "The starter kit", "The premium edition", "Our bestseller",
                  "The compact version", "The spare part", "The accessory pack"),
        verbs=("includes", "ships with", "supports", "replaces", "costs less than", "weighs", "fits", "needs"),
        objects=("a two-year warranty", "a carrying case", "the mounting bracket", "four colour options",
                 "the previous generation", "a USB power supply", "most standard shelves", "the quick start card"),
        qualifiers=("at launch", "in our online store", "while stocks last", "for business customers",
                    "from next month", "in selected markets", "with free delivery"),
        title_subjects=("Product", "Catalogue", "Model", "Edition", "Kit", "Accessory"),
        title_aspects=("specifications", "price list", "features", "variants", "overview", "downloads"),
    ),
    "support": Vocabulary(
        name="support",
        subjects=("The support team", "This article", "The installer", "Your account", "The firmware update",
                  "The control panel", "The error message", "The warranty claim"),
        verbs=("explains", "resets", "requires", "fixes", "lists", "describes", "resolves", "checks"),
        objects=("the login problem", "a stable connection", "the serial number", "the latest version",
                 "your password", "the default settings", "a receipt", "the status light"),
        qualifiers=("step by step", "in most cases", "within one working day", "after a restart",
                    "on the settings page", "for older models", "before you call us"),
        title_subjects=("Troubleshooting", "How to", "Known issue", "Account help", "Installation", "Warranty"),
        title_aspects=("answers", "steps", "workaround", "explained", "checklist", "details"),
    ),
    "news": Vocabulary(
        name="news",
        subjects=("The company", "Our board", "The new office", "The annual report", "Our partners",
                  "The chief executive", "The sales team", "The trade fair", "The charity run"),
        verbs=("announced", "opened", "welcomed", "published", "celebrated", "signed", "hosted", "reported"),
        objects=("record revenue", "a new distribution deal", "twenty new staff", "the spring open day",
                 "a sustainability pledge", "the customer awards", "a regional branch", "the summer party"),
        qualifiers=("this week", "last quarter", "in the city centre", "for the third year running",
                    "with local partners", "ahead of schedule", "at the annual meeting"),
        title_subjects=("Press release", "Company news", "Announcement", "Event report", "Newsletter"),
        title_aspects=("this week", "update", "highlights", "in brief", "recap", "statement"),
    ),
    "directory": Vocabulary(
        name="directory",
        subjects=("This index", "The archive", "The document series", "This folder", "The register",
                  "The collection", "The library catalogue", "The reference list"),
        verbs=("lists", "groups", "holds", "indexes", "sorts", "covers", "links to", "keeps"),
        objects=("documents by number", "every revision", "the current editions", "the withdrawn items",
                 "internal reports", "the numbered series", "older scans", "the annexes"),
        qualifiers=("by series and number", "in order of issue", "for reference", "as filed",
                    "since the reorganisation", "without abstracts", "for staff and visitors"),
        title_subjects=("Index", "Document register", "Series", "Archive", "Library", "Reference"),
        title_aspects=("contents", "listing", "numbered series", "register", "folders", "catalogue"),
    ),
}

#: Neutral parts of site names: no topic term, no theme.
NAME_HEADS = ("North", "Blue", "Silver", "Grand", "Red", "Oak", "Pine", "Stone", "River", "Summit", "Bright",
              "Harbour", "Meadow", "Copper", "Falcon", "Linden", "Granite", "Amber", "Cedar", "Iron")
NAME_TAILS = ("Group", "Works", "Labs", "Partners", "Media", "Systems", "Trading", "Institute", "Associates",
              "Company", "Collective", "Foundation")
#: Codes of document series, written in anchors instead of what a document is about.
SERIES_CODES = ("TN", "TR", "WP", "AN", "DS", "KB", "SR", "RP", "MEMO", "REF", "SPEC", "IM", "PD", "QA", "TM",
                "OPS", "ENG", "CS", "RD", "FR")
MODULE_SYLLABLES = ("kq", "vx", "rt", "pl", "zn", "mb", "dq", "hf", "ws", "gc", "jt", "nx")
