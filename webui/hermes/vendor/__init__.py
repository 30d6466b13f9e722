"""Hermes Agent 0.19.0's own export renderers and secret redaction, vendored unchanged (MIT,
see LICENSE here) so that Logbook's Markdown, QMD, HTML, user-prompt and redacted exports are
byte for byte what `hermes sessions export` writes. Only one import line differs:
``session_export_md`` takes ``redact_sensitive_text`` from the copy beside it instead of
``agent.redact``. All four modules use the standard library only.

Source: hermes_agent-0.19.0-py3-none-any.whl — ``agent/redact.py``,
``hermes_cli/session_export.py``, ``hermes_cli/session_export_md.py``,
``hermes_cli/session_export_html.py``. To update, copy the new release's files over these
and run the oracle tier (tests/test_oracle_hermes.py), which compares every format with the
installed Hermes."""
