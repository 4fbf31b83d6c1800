"""Reports: the run report, the diff between two versions, the known-bug dashboard, and
the terminal table of changes.

Owns rendering (one Jinja2 environment, autoescaped, strict undefined), page contexts
built from the store, inline SVG charts and the templates. Reads the store through
``store.queries`` and the comparison through ``diff``; nothing in the pytest flow
imports it except to write a report at session end. Jinja2 loads only when a page is
rendered.
"""
