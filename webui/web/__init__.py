"""Everything that knows an HTTP request: access and security checks, error pages, the
profile switcher, and the views (blueprints) in ``web.views``."""
