"""``scrapy newjob NAME``: start a job directory (Combine's combineINIT).

Creates ``topics/NAME/`` with a ``combine.cfg`` that lists every variable
commented out at its default (uncomment a line to change it), a topic
definition template that explains the grammar, and an empty ``seeds.txt``.
An existing job is never overwritten.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path

from scrapy.commands import ScrapyCommand

from combine_scrapy.access.urls import UrlRules
from combine_scrapy.job import BLOCKS, CONFIG_FILE, GROUPS, SEEDS_FILE, TOPIC_FILE, VARIABLES
from combine_scrapy.operations.control import CommandError, print_error, settings_of
from combine_scrapy.topic.matching import PLAIN_CUTOFFS

#: Defaults a job configuration leaves unset (None), as the values that mean the same for a new job: the plain
#: filter's cut-offs (each filter has its own), the COMBINE_MAX_URLS_PER_HOST setting's bound.
UNSET_DEFAULTS = {
    ("topic", "tot_cutoff"): PLAIN_CUTOFFS.total,
    ("topic", "cutoff_norm"): PLAIN_CUTOFFS.normalized,
    ("topic", "cutoff_rel"): PLAIN_CUTOFFS.relative,
    ("crawling", "max_urls_per_host"): 10000,
}

BLOCK_HELP = {
    "allow": "<allow> rules, one must match: 'HOST: regex' (the host name alone) or 'URL regex' (the whole URL).\n"
             "Default: every host.",
    "exclude": "<exclude> rules, none may match, in the same form. Default: Combine's list (CGI pages, binary files).",
    "sessionids": "<sessionids>: query parameters removed from URLs. Default: Combine's list (jsessionid, PHPSESSID, ...).",
    "serveralias": "<serveralias>: 'www.example.com example.com' rewrites the later hosts to the first. Default: none.",
    "converters": "<converters>: 'mime/type = program args {input}' lines; '= none' switches a default off.\n"
                  "Default: pdftotext, ps2ascii, antiword, catdoc, xls2csv, catppt, unrtf, textract.",
    "render": "<render> rules, in <allow>'s form: pages are rendered (Render = auto or always) only on the hosts\n"
              "one matches. Default: every host.",
}

TOPIC_TEMPLATE = """\
# Topic definition of job {name}: one term a line, as
#
#     WEIGHT: TERMS=CLASS-LIST
#
# WEIGHT is a whole number (up to 1,000,000,000 either way): what a page scores each time it
#   contains the term, more in its title (x10), meta (x4) and headings (x2) than in its text.
#   A large negative weight excludes a page that has the term.
# TERMS is a word, a phrase (words in this order), terms joined by @and (all must occur), or a
#   Perl-style regular expression (any of . ? * + [ ] ( ) | \\ makes it one). Case does not matter.
# CLASS-LIST is one or more classes, separated by commas; a class may have sub-classes (CP.Drosera).
#
# A page is relevant when its score reaches tot_cutoff (combine.cfg) and the other cut-offs pass.
# Examples:
#
# 50: optical glass=A.14.5, D.2.2
# 30: glass @and fiberoptics=D.2.2.8
# -10000: glass @and art=A
# 75: d\\.?\\s*californica=CP.Drosophyllum
"""

SEEDS_TEMPLATE = "# Start URLs of job {name}, one a line; '#' starts a comment.\n"


def config_value(value: object) -> str:
    """A job configuration default written as combine.cfg reads it."""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.15g}"
    if isinstance(value, (frozenset, set, tuple)):
        return " ".join(sorted(value))
    return str(value)


def job_config(name: str) -> str:
    """A combine.cfg with every variable commented out at its default, and the blocks explained."""
    defaults = {
        (group, field.name): field.default
        for group, cls in (("url_rules", UrlRules), *GROUPS.items())  # the URL bounds are the URL rules' fields
        for field in dataclasses.fields(cls)
        if field.default is not dataclasses.MISSING
    }
    defaults.update((key, value) for key, value in UNSET_DEFAULTS.items() if defaults[key] is None)
    lines = [
        f"# Job {name}. Every variable is listed here at its default, commented out:",
        "# uncomment a line and change its value to set it. Variables are Combine's.",
        "",
    ]
    for variable, spec in VARIABLES.items():
        lines.append(f"# {spec.meaning}")
        lines.append(f"# {variable} = {config_value(defaults[spec.group, spec.field])}".rstrip())
        lines.append("")
    for block in BLOCKS:
        lines.extend(f"# {line}" for line in BLOCK_HELP[block].splitlines())
        lines += [f"# <{block}>", f"# </{block}>", ""]
    return "\n".join(lines)


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[options] <name>"

    def short_desc(self) -> str:
        return "Create a new job directory with a commented combine.cfg, a topic template and seeds.txt"

    def long_desc(self) -> str:
        return __doc__.split("\n\n", 1)[1]

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        try:
            if len(args) != 1:
                raise CommandError("name the new job: scrapy newjob NAME", exitcode=2)
            print(f"created {create_job(args[0], Path(settings_of(self).get('COMBINE_TOPICS_DIR')))}")
        except CommandError as e:
            print_error(self, e)


def create_job(name: str, topics_dir: Path) -> Path:
    """Write ``topics_dir/name/`` and its three files; CommandError when the name is bad or the job exists."""
    if not re.fullmatch(r"[\w.-]+", name) or name.startswith("."):
        raise CommandError(f"bad job name {name!r}: use letters, digits, '.', '-', '_'", exitcode=2)
    directory = topics_dir / name
    files = {
        CONFIG_FILE: job_config(name) + "\n",
        TOPIC_FILE: TOPIC_TEMPLATE.format(name=name),
        SEEDS_FILE: SEEDS_TEMPLATE.format(name=name),
    }
    try:
        directory.mkdir(parents=True)  # fails when it exists: an existing job is never overwritten
        for file_name, text in files.items():
            (directory / file_name).write_text(text, encoding="utf-8")
    except FileExistsError as e:
        raise CommandError(f"{directory} already exists: nothing written (delete it first to start over)") from e
    except OSError as e:
        raise CommandError(f"cannot create {directory}: {e.strerror}") from e
    return directory
