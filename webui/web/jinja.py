"""The templates' Jinja environment: attribute access that is cheap on the dict rows pages
are built from.

Jinja resolves ``row.title`` by trying ``getattr(row, "title")`` first and the item second.
Every row the database layer returns is a plain dict, so each such lookup raised and caught
an AttributeError: ~2,500 of them for a 50-row list, a third of its rendering time. Here a
plain dict's key is looked up first, except for the names of dict's own methods (so
``d.items()`` stays the method even when untrusted JSON has an ``items`` key); anything else
falls back to Jinja's own rule, so results only differ where a dict key shadows a dict
method, which ``_DICT_ATTRS`` excludes.
"""

from __future__ import annotations

from typing import Any

from flask.templating import Environment

_DICT_ATTRS = frozenset(dir(dict))


class LogbookEnvironment(Environment):
    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict and attribute not in _DICT_ATTRS:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)
