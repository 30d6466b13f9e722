"""Hermes's own rules, as pure functions: no Flask, no SQL. Each module holds one family of
rules; where Hermes versions differ, the version is a parameter, never a scattered branch."""
