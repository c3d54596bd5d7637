"""The model's equations: each quantity a small vectorised numpy function beside its Excel twin, and the named constants. Imports nothing of the package but planner.core."""
