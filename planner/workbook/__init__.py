"""The output workbook (XlsxWriter only): references, styles, layout, one writer per sheet or family of sheets."""
