"""Error pages: a clear sentence, the right status, never a stack trace, SQL or foreign path."""

from __future__ import annotations

import logging

from flask import Flask, jsonify, make_response, render_template, request
from werkzeug.exceptions import HTTPException

from webui.db import DatabaseUnavailable, LogbookDBError

log = logging.getLogger("webui")

TITLES = {
    400: "Bad request",
    403: "Not allowed",
    404: "Not found",
    405: "Method not allowed",
    413: "Too large",
    429: "Too many requests",
    500: "Something went wrong",
    503: "Database busy",
    507: "Disk full",
}


def wants_json() -> bool:
    return request.args.get("format") == "json"


def error_response(
    status: int,
    message: str,
    retry_after: int | None = None,
    title: str | None = None,
    again: bool = False,
):
    """``again``: the problem is the database file itself; the page offers to look again (a
    link back to the list would meet the same error)."""
    title = title or TITLES.get(status, "Error")
    if wants_json():
        body = jsonify({"error": title, "message": message, "status": status})
    else:
        body = render_template(
            "error.html",
            status=status,
            title=title,
            message=message,
            again=request.full_path.rstrip("?") if again else None,
        )
    resp = make_response(body, status)
    if retry_after:
        resp.headers["Retry-After"] = str(retry_after)
    return resp


def init_app(app: Flask) -> None:
    @app.errorhandler(LogbookDBError)
    def db_error(exc: LogbookDBError):
        return error_response(
            exc.status,
            exc.message,
            retry_after=2 if exc.status in (429, 503) else None,
            title=exc.title,
            again=isinstance(exc, DatabaseUnavailable),
        )

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        return error_response(exc.code or 500, exc.description or TITLES.get(exc.code, ""))

    @app.errorhandler(Exception)
    def unexpected(exc: Exception):
        log.exception("unhandled error on %s", request.path)
        return error_response(
            500,
            "Logbook hit an unexpected error. The details are in the "
            "server's log; nothing was changed.",
        )
