"""MkDocs hooks: the command-line page's option reference, generated from ``flows.cli.build_parser``, and the
docstrings' Sphinx cross-reference roles shown as code.

``mkdocs.yml`` lists this file under ``hooks:``. The marker ``<!-- fairmiss-cli-help -->`` in a page is
replaced by one section per ``fairmiss`` sub-command holding its ``--help`` text, so the page cannot drift
from the parser. The docstrings use Sphinx roles (``:class:`~fairmiss.tracking.Tracker```), which
mkdocstrings renders as text followed by code (":class:" then ``~fairmiss.tracking.Tracker``); each rendered
page shows them as the code alone, and a leading ``~`` as Sphinx does (the last name only).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

MARKER = "<!-- fairmiss-cli-help -->"
ROOT = Path(__file__).resolve().parents[1]


def _help_sections() -> str:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    os.environ.setdefault("COLUMNS", "100")
    from flows.cli import build_parser

    parser = build_parser()
    parts = ["### `fairmiss`", "", "```text", parser.format_help().rstrip(), "```", ""]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                parts += [f"### `fairmiss {name}`", "", "```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(parts)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 (MkDocs hook signature)
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, _help_sections())
    return markdown


_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const|func):<code>(~?)([^<]*)</code>")


def _role(m: re.Match) -> str:
    target = m.group(2)
    return f"<code>{target.rsplit('.', 1)[-1] if m.group(1) else target}</code>"


def on_post_page(output: str, page, config) -> str:  # noqa: ARG001 (MkDocs hook signature)
    return _ROLE.sub(_role, output)
