"""arcticlite: versioned dataframes in LMDB or S3, with ArcticDB's API."""

__version__ = "0.1.0"

__all__ = ["__version__"]
