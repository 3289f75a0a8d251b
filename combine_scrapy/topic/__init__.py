"""The topic filter: pure Python, independent of Scrapy; the pipelines call it."""

from combine_scrapy.topic.definition import (
    TopicDefinition,
    TopicDefinitionError,
    TopicTerm,
    load_topic_definition,
    parse_topic_definition,
)
from combine_scrapy.topic.filters import TopicFilter, build_filter, load_plugin
from combine_scrapy.topic.matching import (
    Classification,
    ClassScore,
    Cutoffs,
    PlainMatcher,
    PositionMatcher,
)
from combine_scrapy.topic.text import Document

__all__ = [
    "Classification", "ClassScore", "Cutoffs", "Document", "PlainMatcher", "PositionMatcher",
    "TopicDefinition", "TopicDefinitionError", "TopicFilter", "TopicTerm",
    "build_filter", "load_plugin", "load_topic_definition", "parse_topic_definition",
]
