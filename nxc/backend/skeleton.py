"""The jinja2 file skeletons both backends render (nxc/backend/templates/*.j2)."""
from __future__ import annotations

from functools import lru_cache

import jinja2

from nxc.paths import templates_dir


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(templates_dir()),
                              trim_blocks=True, lstrip_blocks=True,
                              keep_trailing_newline=True, undefined=jinja2.StrictUndefined)


def template(name: str) -> jinja2.Template:
    return _environment().get_template(name)
