"""Errors the database layer raises; each carries a message fit to show a user."""


class LogbookDBError(Exception):
    """Base class. ``message`` is safe to show: no SQL, no paths but the database's own."""

    status = 500

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class DatabaseBusy(LogbookDBError):
    """The database stayed locked (or hit a transient I/O error) through every retry."""

    status = 503


class QueryTimeout(LogbookDBError):
    """A user-driven query ran past its time limit and was interrupted."""

    status = 503


class DatabaseUnavailable(LogbookDBError):
    """The file vanished, became unreadable or corrupt while we were serving it."""

    status = 503


class BadRequest(LogbookDBError):
    """A parameter that cannot be turned into a query (bad cursor, bad date...)."""

    status = 400


class StartupError(Exception):
    """The database cannot be served at all; the CLI prints the message and exits 2."""
