"""The oai_dc XML Schema shipped in schemas/, loaded without the network.

oai_dc.xsd imports the DCMI simple Dublin Core schema, which imports the W3C
schema for the ``xml:`` namespace, both by their published http:// URLs; a
resolver answers those URLs from the copies in the package. The copies are
read through importlib.resources, so they are found when the package runs
from a zipped egg (scrapyd's) as well as from a directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import TYPE_CHECKING

from lxml import etree

if TYPE_CHECKING:
    from lxml.etree._docloader import _InputDocument

SCHEMA_DIR = files("combine_scrapy.records.export") / "schemas"
OAI_DC_URL = "http://www.openarchives.org/OAI/2.0/oai_dc.xsd"
#: Published schema URLs and the package's copies of them.
LOCAL_COPIES: Mapping[str, Traversable] = {
    OAI_DC_URL: SCHEMA_DIR / "oai_dc.xsd",
    "http://dublincore.org/schemas/xmls/simpledc20021212.xsd": SCHEMA_DIR / "simpledc20021212.xsd",
    "http://www.w3.org/2001/03/xml.xsd": SCHEMA_DIR / "xml.xsd",
}


class PackagedSchemas(etree.Resolver):
    """Answers the URLs of ``copies`` with the package's copies; any other URL is left to the parser."""

    def __init__(self, copies: Mapping[str, Traversable]) -> None:
        super().__init__()
        self.copies = copies

    def resolve(self, system_url: str | None, public_id: str | None, context: object) -> _InputDocument | None:
        copy = self.copies.get(system_url or "")
        return self.resolve_string(copy.read_bytes(), context, base_url=system_url) if copy else None


@cache
def oai_dc_schema() -> etree.XMLSchema:
    """The oai_dc schema; its ``validate(element)`` checks one ``oai_dc:dc`` element."""
    parser = etree.XMLParser(no_network=True)
    parser.resolvers.add(PackagedSchemas(LOCAL_COPIES))
    return etree.XMLSchema(etree.fromstring(LOCAL_COPIES[OAI_DC_URL].read_bytes(), parser, base_url=OAI_DC_URL))
