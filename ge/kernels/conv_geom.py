"""A convolution's geometry as its kernels read it: one int64 array (conv.py's `_geom` builds it), its
positions named here so neither a kernel nor a prepare function counts them.

Kernels read `geom[cg.KH]`: Numba freezes a module's int constants into the code, so a name costs nothing.
Every spatial triple is (depth, height, width), a 1-D or 2-D conv padded to 3-D with neutral values (size,
stride and dilation 1, pad 0). Pads are the leading ones; a kernel derives the trailing side from the sizes.
"""
N, C = 0, 1                  # batch, input channels
D, H, W = 2, 3, 4            # input spatial sizes
M = 5                        # output channels
OD, OH, OW = 6, 7, 8         # output spatial sizes
KD, KH, KW = 9, 10, 11       # kernel extent
SD, SH, SW = 12, 13, 14      # strides
PD, PH, PW = 15, 16, 17      # leading pads
DD, DH, DW = 18, 19, 20      # dilations
GROUP = 21
SIZE = 22

SPATIAL = slice(D, W + 1)
OUTPUT = slice(OD, OW + 1)
KERNEL = slice(KD, KW + 1)
STRIDES = slice(SD, SW + 1)
PADS = slice(PD, PW + 1)
DILATIONS = slice(DD, DW + 1)
