"""Setup and asset scripts; those that import each other run as modules from the repository root."""
