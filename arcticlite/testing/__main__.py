"""``python -m arcticlite.testing``: a local S3 endpoint (moto) to try arcticlite's S3 path on;
see :func:`arcticlite.testing.s3server.main`."""

from arcticlite.testing.s3server import main

raise SystemExit(main())
