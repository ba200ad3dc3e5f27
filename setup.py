"""Build of the optional native kernels; everything else is in setup.cfg.

``arcticlite.format._native`` is compiled when a C compiler is present. It is optional: when
the build fails, installation goes on and arcticlite uses its numpy code, which gives the
same bytes (docs/engine.md, "Native kernels").
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "arcticlite.format._native",
            sources=["arcticlite/format/_native.c"],
            # no fused multiply-add: products and quotients round exactly as numpy's do; no FP
            # exception traps assumed (arcticlite never reads the flags): branch-free loops
            extra_compile_args=["-O3", "-ffp-contract=off", "-fno-fast-math", "-fno-trapping-math"],
            optional=True,
        )
    ]
)
