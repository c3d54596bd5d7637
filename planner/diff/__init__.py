"""Quarter over quarter: the input changes, the cost bridge, its workbook and memo."""
