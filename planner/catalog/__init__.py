"""The model and GPU catalogs shipped with the package: lookup by name, did-you-mean."""
