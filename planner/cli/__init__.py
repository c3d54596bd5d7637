"""The command line: a thin layer over the library (argument parsing, exit codes, reports)."""
