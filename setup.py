"""The project as an egg for scrapyd (`scrapyd-deploy local`); a crawl from the checkout does not need it."""

from setuptools import find_packages, setup

setup(
    name="combine_scrapy",
    version="0.1",
    packages=find_packages(include=["combine_scrapy", "combine_scrapy.*"]),
    package_data={"combine_scrapy": ["export/schemas/*.xsd", "console/schemas/*.xsd", "console/static/*"]},
    entry_points={"scrapy": ["settings = combine_scrapy.settings"]},
)
