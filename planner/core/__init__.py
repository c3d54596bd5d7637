"""The foundation every layer may use: the one schema table of input columns, located problems, column references, atomic file writing."""
