"""The bundled example input and the blank template."""
