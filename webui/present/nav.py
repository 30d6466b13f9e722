"""The site's navigation: every place, one line each, in the order the bar shows them.

A place with a ``menu`` sits in that menu (a disclosure in the bar: a button that opens a
list, by keyboard, touch or mouse, and without JavaScript); the others sit in the bar itself.
To add a page, add its line here (``menu="History"`` to put it with the history's pages).
A place is "current" on its own endpoint, or on the endpoints ``current`` names (a name
ending in "." stands for a blueprint's every page)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Place:
    label: str
    endpoint: str
    title: str = ""
    menu: str = ""
    current: tuple[str, ...] = ()
    # Current only when the request has (``with_arg``) or lacks (``without_arg``) this arg.
    with_arg: str = ""
    without_arg: str = ""
    # Shown only where the file takes such changes: "change" (any), "removal" (delete, prune,
    # cold storage: changes that write messages).
    needs: str = ""


PLACES: tuple[Place, ...] = (
    Place("Sessions", "sessions.list_sessions", current=("sessions.",), without_arg="active"),
    Place(
        "Live",
        "sessions.live",
        "conversations active in the last hour",
        current=("sessions.list_sessions",),
        with_arg="active",
    ),
    Place("Search", "search.search"),
    Place("Stats", "stats.stats"),
    Place("Origins", "origins.chats", "chats, workspaces and people", current=("origins.",)),
    Place("Files", "files.files", "files agents wrote or changed", current=("files.",)),
    Place("Storage", "storage.storage", "where the database's bytes go"),
    Place("Export", "export.form"),
    Place(
        "Where it is kept",
        "stores.index",
        "every store of the history: the live file, archive files, other machines",
        menu="History",
    ),
    Place(
        "Archive",
        "actions.archive_form",
        "hide old conversations from the list, recoverably",
        menu="History",
        needs="change",
    ),
    Place(
        "Cold storage",
        "coldstore.form",
        "move old conversations out of the live file into monthly archive files",
        menu="History",
        current=("coldstore.",),
        needs="removal",
    ),
    Place(
        "Prune",
        "actions.prune_form",
        "delete old conversations for good",
        menu="History",
        current=("actions.prune_form", "actions.prune_job"),
        needs="removal",
    ),
)


@dataclass
class Item:
    """One thing in the bar: a place, or a menu holding places."""

    label: str
    place: Place | None = None
    places: list[tuple[Place, bool]] = field(default_factory=list)  # (place, current?)
    current: bool = False


def is_current(place: Place, endpoint: str | None, args: Mapping[str, Any]) -> bool:
    if not endpoint:
        return False
    names = place.current or (place.endpoint,)
    if not any(endpoint == n or (n.endswith(".") and endpoint.startswith(n)) for n in names):
        return False
    if place.with_arg and not args.get(place.with_arg):
        return False
    return not (place.without_arg and args.get(place.without_arg))


def bar(
    endpoint: str | None,
    args: Mapping[str, Any],
    places: tuple[Place, ...] = PLACES,
    *,
    can_change: bool = True,
    can_remove: bool = True,
) -> list[Item]:
    """The bar's items in order: places, and each menu where its first place stands. Places
    for changes the file does not take here are left out (their pages still say why)."""
    items: list[Item] = []
    menus: dict[str, Item] = {}
    for place in places:
        if (place.needs == "change" and not can_change) or (
            place.needs == "removal" and not can_remove
        ):
            continue
        here = is_current(place, endpoint, args)
        if not place.menu:
            items.append(Item(place.label, place=place, current=here))
            continue
        menu = menus.get(place.menu)
        if menu is None:
            menu = menus[place.menu] = Item(place.menu)
            items.append(menu)
        menu.places.append((place, here))
        menu.current = menu.current or here
    return items
