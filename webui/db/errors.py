"""Errors the database layer raises; each carries a message fit to show a user."""


class LogbookDBError(Exception):
    """Base class. ``message`` is safe to show: no SQL, no paths but the database's own.
    ``title``: what the error page is called (None: named by its status)."""

    status = 500
    title: str | None = None

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class DatabaseBusy(LogbookDBError):
    """The database stayed locked (or hit a transient I/O error) through every retry."""

    status = 503
    title = "Database busy"


class QueryTimeout(LogbookDBError):
    """A user-driven query ran past its time limit and was interrupted."""

    status = 503
    title = "This took too long"


class DatabaseUnavailable(LogbookDBError):
    """The file vanished, became unreadable or corrupt while we were serving it."""

    status = 503
    title = "Database unavailable"


class DatabaseMissing(DatabaseUnavailable):
    """The database file is gone (deleted or moved) while Logbook serves it."""

    title = "Database file missing"


class DiskFull(LogbookDBError):
    """The disk (or the file's size limit) left no room for a change: nothing was changed."""

    status = 507
    title = "Disk full"


class BadRequest(LogbookDBError):
    """A parameter that cannot be turned into a query (bad cursor, bad date...)."""

    status = 400


class StartupError(Exception):
    """The database cannot be served at all; the CLI prints the message and exits 2."""


class NotFound(LogbookDBError):
    """No such session or job."""

    status = 404
