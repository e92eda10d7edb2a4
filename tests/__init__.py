"""Tests run outside the C++ test binaries; those that import shared code run as modules from the repository root."""
