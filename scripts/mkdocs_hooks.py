"""MkDocs hook: the command-line page's option reference, generated from ``flows.cli.build_parser``.

``mkdocs.yml`` lists this file under ``hooks:``. The marker ``<!-- fairmiss-cli-help -->`` in a page is
replaced by one section per ``fairmiss`` sub-command holding its ``--help`` text, so the page cannot drift
from the parser.
"""

from __future__ import annotations

import argparse
import os
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
