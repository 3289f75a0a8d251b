"""Word lists the virtual web writes its pages with, and the paragraph pools built from them.

Vocabulary 0 is the topic (carnivorous plants, matching ``topicdefinition.txt``);
the others are off the topic and contain none of its terms, except baseball,
whose "pitcher" always comes with "baseball" so the definition's negative
``pitcher @and baseball`` row cancels it, as in the demo job. A page is built
from whole pre-rendered paragraphs, so serving one costs a join, not a text
generator run.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Vocabulary:
    name: str
    subjects: tuple[str, ...]
    verbs: tuple[str, ...]
    objects: tuple[str, ...]
    qualifiers: tuple[str, ...]
    title_subjects: tuple[str, ...]
    title_aspects: tuple[str, ...]


TOPIC = 0

VOCABULARIES: tuple[Vocabulary, ...] = (
    Vocabulary(
        name="carnivorous plants",
        subjects=(
            "Carnivorous plants", "Sundews", "Drosera capensis", "Drosera rotundifolia", "Nepenthes",
            "Nepenthes rajah", "Sarracenia flava", "Sarracenia purpurea", "The Venus flytrap",
            "Dionaea muscipula", "Pitcher plants", "Butterworts", "Pinguicula moranensis",
            "Bladderworts", "Utricularia gibba", "Cephalotus follicularis", "Darlingtonia californica",
            "Heliamphora nutans", "Drosophyllum lusitanicum", "Aldrovanda vesiculosa",
            "Insectivorous plants", "Most carnivorous plants",
        ),
        verbs=(
            "catch", "digest", "attract", "lure", "need", "prefer", "tolerate", "grow best with",
            "absorb nutrients from", "die back without", "produce", "depend on",
        ),
        objects=(
            "small insects", "flies and gnats", "pure rainwater", "a peat and sand mix",
            "live sphagnum moss from a bog", "high humidity", "full sun", "a cool winter dormancy",
            "digestive enzymes", "sticky tentacles", "slippery pitchers", "nectar glands",
            "acidic, nutrient-poor soil", "a bright terrarium", "a shallow water tray",
        ),
        qualifiers=(
            "in summer", "on a sunny windowsill", "in a cold greenhouse", "in their native bogs",
            "when grown from seed", "during the growing season", "in cultivation",
            "in the wild", "after repotting", "in a bog garden",
        ),
        title_subjects=(
            "Drosera capensis", "Cape sundews", "Nepenthes rajah", "Tropical pitcher plants",
            "Sarracenia hybrids", "The Venus flytrap", "Dionaea cultivars", "Butterworts (Pinguicula)",
            "Bladderworts (Utricularia)", "Cephalotus", "Carnivorous plants", "Darlingtonia",
            "Heliamphora", "Drosophyllum", "Insectivorous plants",
        ),
        title_aspects=(
            "care and cultivation", "growing from seed", "winter dormancy", "soil and water",
            "pests and diseases", "propagation", "species list", "field notes", "a beginner's guide",
            "feeding", "photographs", "repotting",
        ),
    ),
    Vocabulary(
        name="baseball",
        subjects=(
            "The baseball team", "Our starting baseball pitcher", "The catcher", "The shortstop",
            "The baseball league", "The home crowd", "The baseball coach", "The rookie outfielder",
            "Every baseball pitcher", "The umpire",
        ),
        verbs=("won", "lost", "threw", "hit", "scored", "played", "struck out", "signed", "traded", "watched"),
        objects=(
            "three home runs", "the final inning", "a no-hitter", "the batting average record",
            "the opening game", "a double play", "the world series", "nine strikeouts",
            "the spring training camp", "a new contract",
        ),
        qualifiers=(
            "last season", "at the stadium", "in extra innings", "before the trade deadline",
            "on opening day", "in the playoffs", "under the lights", "against the champions",
        ),
        title_subjects=("Baseball", "Season preview", "Game report", "League standings", "Trade rumours"),
        title_aspects=("week in review", "box scores", "interviews", "statistics", "schedule", "highlights"),
    ),
    Vocabulary(
        name="cooking",
        subjects=(
            "The chef", "Our bakery", "This recipe", "The soup", "Fresh pasta", "The sauce",
            "A good stew", "The sourdough", "Roast vegetables", "The dessert",
        ),
        verbs=("needs", "combines", "uses", "takes", "tastes of", "improves with", "calls for", "skips"),
        objects=(
            "two cups of flour", "fresh basil", "a pinch of salt", "slow simmering", "olive oil",
            "brown butter", "ripe tomatoes", "an hour in the oven", "garlic and thyme", "dark chocolate",
        ),
        qualifiers=(
            "on a weekday", "for a family dinner", "in a cast iron pan", "at low heat",
            "before serving", "the night before", "in the winter months", "for beginners",
        ),
        title_subjects=("Recipes", "Weeknight dinners", "Baking", "Soups and stews", "Kitchen basics"),
        title_aspects=("ingredients", "step by step", "tips", "variations", "our favourites", "menu"),
    ),
    Vocabulary(
        name="motoring",
        subjects=(
            "The new hatchback", "The diesel engine", "This sports car", "The electric van",
            "Our mechanic", "The gearbox", "The family estate", "The roadster", "The test driver",
        ),
        verbs=("reaches", "consumes", "needs", "offers", "lacks", "handles", "beats", "tows"),
        objects=(
            "a top speed of two hundred kilometres per hour", "six litres per hundred kilometres",
            "new brake pads", "a larger boot", "adaptive cruise control", "winter tyres",
            "a service every year", "a heavy caravan", "the motorway traffic",
        ),
        qualifiers=(
            "on wet roads", "in city traffic", "on the test track", "after the facelift",
            "at the dealership", "on long journeys", "in cold weather",
        ),
        title_subjects=("Road test", "Used car guide", "Motor show", "Maintenance", "Car reviews"),
        title_aspects=("verdict", "prices", "specifications", "buying advice", "fuel economy", "rivals"),
    ),
    Vocabulary(
        name="finance",
        subjects=(
            "The central bank", "Our fund", "The stock market", "Bond yields", "The pension plan",
            "Small investors", "The quarterly report", "Mortgage rates", "The exchange rate",
        ),
        verbs=("rose above", "fell below", "tracked", "outperformed", "depends on", "reflects", "ignored"),
        objects=(
            "market expectations", "the inflation target", "last year's earnings", "the index",
            "interest rate changes", "the dividend forecast", "the budget deficit", "consumer spending",
        ),
        qualifiers=(
            "this quarter", "in early trading", "over ten years", "after the announcement",
            "in real terms", "despite the downturn", "according to analysts",
        ),
        title_subjects=("Markets", "Personal finance", "Investing", "Economy", "Savings"),
        title_aspects=("outlook", "daily briefing", "analysis", "rates", "what to watch", "explained"),
    ),
    Vocabulary(
        name="music",
        subjects=(
            "The orchestra", "The band", "Our choir", "The pianist", "The new album", "The festival",
            "The string quartet", "The drummer", "The conductor",
        ),
        verbs=("played", "recorded", "performed", "rehearsed", "released", "toured with", "premiered"),
        objects=(
            "a new symphony", "twelve new songs", "the jazz standards", "an acoustic set",
            "the violin concerto", "a sold-out show", "the live recording", "the opening number",
        ),
        qualifiers=(
            "at the concert hall", "last night", "on the summer tour", "in the studio",
            "for the first time", "to a full house", "at the open air stage",
        ),
        title_subjects=("Concert review", "New releases", "Festival guide", "Interview", "Tour dates"),
        title_aspects=("tickets", "programme", "highlights", "setlist", "reviews", "news"),
    ),
    Vocabulary(
        name="travel",
        subjects=(
            "The old town", "Our guide", "The coastal path", "The ferry", "The mountain hut",
            "The night train", "The museum", "The harbour", "The hostel",
        ),
        verbs=("offers", "connects", "overlooks", "welcomes", "closes", "leads to", "costs"),
        objects=(
            "a view of the bay", "the island villages", "guided walking tours", "cheap dormitory beds",
            "the medieval castle", "the national park", "the cathedral square", "the ski slopes",
        ),
        qualifiers=(
            "in the high season", "every morning", "on public holidays", "from April to October",
            "for a small fee", "off the beaten track", "after sunset",
        ),
        title_subjects=("Travel guide", "Weekend break", "Hiking", "City walks", "Island hopping"),
        title_aspects=("where to stay", "getting there", "itinerary", "budget tips", "maps", "photos"),
    ),
    Vocabulary(
        name="site",
        subjects=(
            "Our shop", "The shipping department", "Customer service", "This website", "Our company",
            "The newsletter", "The returns policy", "Our team",
        ),
        verbs=("handles", "offers", "answers", "protects", "sends", "updates", "covers", "explains"),
        objects=(
            "orders within two days", "your personal data", "questions by e-mail", "free delivery",
            "gift vouchers", "secure payments", "a thirty day return window", "opening hours",
        ),
        qualifiers=(
            "on working days", "in most countries", "as required by law", "at no extra cost",
            "from Monday to Friday", "without registration",
        ),
        title_subjects=("About us", "Shop", "Contact", "Privacy", "Shipping", "Newsletter"),
        title_aspects=("information", "terms", "frequently asked questions", "details", "help", "policy"),
    ),
)

# One sentence an off-topic page may carry about the topic: a single term of
# weight <= 50, so the page stays under Combine's default cutoff of 90.
PASSING_MENTIONS = (
    "A visitor left a Venus flytrap on the reception desk.",
    "The gift shop also sells sundews in small pots.",
    "Someone in the office grows a Nepenthes on the windowsill.",
    "A pot of butterworts kept the fruit flies out of the kitchen.",
    "The raffle prize was a Sarracenia in a ceramic pot.",
)

ADVERTS = (
    "Save 20% on garden hoses this week only.",
    "New: waterproof hiking boots, free returns.",
    "Subscribe now and get the first month free.",
    "Winter tyres fitted while you wait.",
    "Book your summer holiday before the end of the month.",
    "Two pizzas for the price of one every Tuesday.",
    "Learn a language in twelve weeks online.",
    "Noise-cancelling headphones at half price.",
)

MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)


def _sentence(vocabulary: Vocabulary, rng: random.Random) -> str:
    return (
        f"{rng.choice(vocabulary.subjects)} {rng.choice(vocabulary.verbs)} "
        f"{rng.choice(vocabulary.objects)} {rng.choice(vocabulary.qualifiers)}."
    )


def paragraph_pools(seed: int, size: int) -> tuple[tuple[bytes, ...], ...]:
    """``size`` ready-made ``<p>`` paragraphs (3 to 7 sentences) per vocabulary, deterministic in ``seed``."""
    pools = []
    for number, vocabulary in enumerate(VOCABULARIES):
        rng = random.Random(seed * 1009 + number)
        pool = []
        for _ in range(size):
            text = " ".join(_sentence(vocabulary, rng) for _ in range(rng.randint(3, 7)))
            pool.append(f"<p>{text}</p>\n".encode())
        pools.append(tuple(pool))
    return tuple(pools)
