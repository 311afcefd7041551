"""ge: a graph compiler and two runtimes for a modelled NPU, after Huawei's GE."""
