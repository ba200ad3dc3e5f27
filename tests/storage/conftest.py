"""Fixtures of the storage tests (the backend fixtures live in tests/conftest.py)."""
