"""The OAI-PMH 2.0 response schema shipped in schemas/, with oai_dc, loaded without the network.

``schemas/OAI-PMH.xsd`` is the protocol's schema as published at
http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd (its 2005 revision). The copy
comes from the pyoai 2.5.0 package on PyPI, which bundles it for its tests
with its three wildcards (metadata, about, description) relaxed to
``processContents="skip"``; here they are ``strict`` again, as published, so
a record's metadata is validated against its own schema too. The oai_dc
schema and the schemas it imports are those of ``combine_scrapy/records/export/schemas``; all are read
through importlib.resources, as export/schemas.py reads its own.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from lxml import etree

from combine_scrapy.records.export.dc import OAI_DC_NAMESPACE
from combine_scrapy.records.export.schemas import LOCAL_COPIES, OAI_DC_URL, PackagedSchemas

SCHEMA_DIR = files("combine_scrapy.operations.console") / "schemas"
OAI_NAMESPACE = "http://www.openarchives.org/OAI/2.0/"
OAI_PMH_URL = "http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd"


@cache
def oai_pmh_schema() -> etree.XMLSchema:
    """OAI-PMH 2.0 responses whose metadata is oai_dc: ``validate(document)`` checks the whole response."""
    wrapper = f"""<schema xmlns="http://www.w3.org/2001/XMLSchema">
      <import namespace="{OAI_NAMESPACE}" schemaLocation="{OAI_PMH_URL}"/>
      <import namespace="{OAI_DC_NAMESPACE}" schemaLocation="{OAI_DC_URL}"/>
    </schema>"""
    parser = etree.XMLParser(no_network=True)
    parser.resolvers.add(PackagedSchemas({**LOCAL_COPIES, OAI_PMH_URL: SCHEMA_DIR / "OAI-PMH.xsd"}))
    return etree.XMLSchema(etree.fromstring(wrapper, parser))
