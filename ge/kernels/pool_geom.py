"""pool_plane.pool2d's geometry array, its positions named (pool.py's `_plane_launch` builds it; a kernel
reads `geom[pg.KW]`, a constant Numba freezes into the code).

A 2-D window over planes of NC = N * C rows: input and output sizes, the window, strides, leading pads, the
counted input rows [CLH, CHH) for averages, and FLAT (1: `_flat`'s layout, its blocks split the planes).
"""
NC, H, W, OH, OW = 0, 1, 2, 3, 4
KH, KW, SH, SW, PH, PW = 5, 6, 7, 8, 9, 10
CLH, CHH, FLAT = 11, 12, 13
SIZE = 14
