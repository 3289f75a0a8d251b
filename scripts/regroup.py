"""One-off: move the flat package into groups that follow a URL's path, and rewrite every reference.

Run from the project root: python scripts/regroup.py [--move]. Without --move it only rewrites
references (for a branch merged after the move). Idempotent.
"""

import re
import subprocess
import sys
from pathlib import Path

# old module path (dotted, under combine_scrapy) -> new one
MOVES = {
    "urls": "access.urls",
    "robots": "access.robots",
    "addresses": "access.addresses",
    "politeness": "access.politeness",
    "parse": "document.parse",
    "htmltree": "document.htmltree",
    "content": "document.content",
    "neardup": "document.neardup",
    "analyse": "document.analyse",
    "convert": "document.convert",
    "topic.links": "links.scoring",
    "topic.online": "links.online",
    "topic.urlpatterns": "links.learned",
    "sitemaps": "links.sitemaps",
    "record": "records.record",
    "store": "records.store",
    "export": "records.export",
    "irrelevant": "records.irrelevant",
    "warc": "records.warc",
    "control": "operations.control",
    "report": "operations.report",
    "harvestlog": "operations.harvestlog",
    "debug": "operations.debug",
    "console": "operations.console",
    "sampleweb": "operations.sampleweb",
}

PACKAGE_DOCS = {
    "access": "What may be fetched, and when: URL rules and canonical form, robots.txt, addresses, host pacing.",
    "document": "What a fetch becomes: the parsed document, its text, content key and near-duplicate fingerprint.",
    "links": "Which links are followed first: link scoring, learned URL rules, the online model, sitemaps.",
    "records": "The records a crawl keeps, and what is made of them: stores, exports, WARC files.",
    "operations": "Running a job: command helpers, the harvest log, reports, the web console, a test web.",
}

TEXT_SUFFIXES = {".py", ".md", ".toml", ".cfg", ".sh", ".yml", ".yaml", ".txt", ".ini", ".js", ".html", ".lua", ""}


def rewrite(text: str) -> str:
    for old, new in sorted(MOVES.items(), key=lambda item: -len(item[0])):
        dotted_old = re.escape("combine_scrapy." + old)
        text = re.sub(rf"\b{dotted_old}\b(?!/)", "combine_scrapy." + new, text)
        slash_old = re.escape("combine_scrapy/" + old.replace(".", "/"))
        slash_new = "combine_scrapy/" + new.replace(".", "/")
        text = re.sub(rf"\b{slash_old}(?=\.py\b|/)", slash_new, text)
        parent, _, name = ("combine_scrapy." + old).rpartition(".")
        new_parent, _, new_name = ("combine_scrapy." + new).rpartition(".")
        # from combine_scrapy import content  ->  from combine_scrapy.document import content
        text = re.sub(rf"^(\s*)from {re.escape(parent)} import {name}$",
                      rf"\1from {new_parent} import {new_name}" + ("" if name == new_name else f" as {name}"),
                      text, flags=re.M)
        if "." in old:  # topic/links.py written without the package prefix
            text = re.sub(rf"(?<![\w/]){re.escape(old.replace('.', '/'))}\.py\b", new.replace(".", "/") + ".py", text)
    return text


def move() -> None:
    for package, doc in PACKAGE_DOCS.items():
        directory = Path("combine_scrapy", package)
        directory.mkdir(exist_ok=True)
        init = directory / "__init__.py"
        if not init.exists():
            init.write_text(f'"""{doc}"""\n')
            subprocess.run(["git", "add", str(init)], check=True)
    for old, new in MOVES.items():
        source = Path("combine_scrapy", *old.split("."))
        target = Path("combine_scrapy", *new.split("."))
        if not source.is_dir():
            source, target = source.with_suffix(".py"), target.with_suffix(".py")
        if source.exists():
            subprocess.run(["git", "mv", str(source), str(target)], check=True)


def main() -> None:
    if "--move" in sys.argv:
        move()
    files = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        path = Path(name)
        if path.suffix not in TEXT_SUFFIXES or name.startswith(("bench/results/", "tests/data/")) or not path.is_file():
            continue
        if name == "scripts/regroup.py":
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        new = rewrite(text)
        if new != text:
            path.write_text(new)


if __name__ == "__main__":
    main()
