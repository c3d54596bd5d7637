"""Excel's own limits, which the input checks and the writer both need."""

MAX_DATA_ROWS = 1_048_575      # Excel: 1,048,576 rows a sheet, less the header row
