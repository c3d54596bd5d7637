"""The planning memo: numbers, rendering with jinja2, charts (matplotlib), the email."""
