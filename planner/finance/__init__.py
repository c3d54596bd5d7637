"""The finance view in numbers: fleet totals per GPU type, demand by period, scenarios re-planned."""
