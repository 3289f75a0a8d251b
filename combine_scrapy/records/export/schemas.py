"""The oai_dc XML Schema shipped in schemas/, loaded without the network.

oai_dc.xsd imports the DCMI simple Dublin Core schema, which imports the W3C
schema for the ``xml:`` namespace, both by their published http:// URLs; a
resolver answers those URLs from the copies beside this file.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from lxml import etree

SCHEMA_DIR = Path(__file__).parent / "schemas"
LOCAL_COPIES = {
    "http://dublincore.org/schemas/xmls/simpledc20021212.xsd": SCHEMA_DIR / "simpledc20021212.xsd",
    "http://www.w3.org/2001/03/xml.xsd": SCHEMA_DIR / "xml.xsd",
}


class _LocalSchemas(etree.Resolver):
    def resolve(self, url, public_id, context):
        local = LOCAL_COPIES.get(url)
        return self.resolve_filename(str(local), context) if local else None


@cache
def oai_dc_schema() -> etree.XMLSchema:
    """The oai_dc schema; its ``validate(element)`` checks one ``oai_dc:dc`` element."""
    parser = etree.XMLParser(no_network=True)
    parser.resolvers.add(_LocalSchemas())
    return etree.XMLSchema(etree.parse(str(SCHEMA_DIR / "oai_dc.xsd"), parser))
