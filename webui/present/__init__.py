"""Presentation: database rows → what templates show (labels, rendered Markdown, charts,
lineage layout, Jinja filters). Pure functions: no Flask request, no SQL."""
