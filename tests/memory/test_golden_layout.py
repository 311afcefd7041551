"""Golden memory layout of a small graph: a change of planning decision shows up here in review."""
import ge
from ge.memory.report import memory_layout
from golden_graph import golden_graph

GOLDEN = """\
feature_map 8192 B by binary-block; bound 8192 B; io 6144 B
  0 Relu       %a feature_map@0+2048[0,2]
  1 Relu       %b feature_map@4096+2048[1,3]
  2 Relu       %c feature_map@6144+2048[2,3]
  3 Concat     %d feature_map@0+4096[3,6]
  4 Reshape    %e feature_map@0+4096[3,6] =d
  5 Relu       %f feature_map@4096+4096[5,6]
  6 Add        %y io@0+4096"""

# the Concat in place: b and c are written into d's halves, so its block lives from b's producer on
GOLDEN_CONCAT_IN_PLACE = """\
feature_map 8192 B by binary-block; bound 8192 B; io 6144 B
  0 Relu       %a feature_map@4096+2048[0,2]
  1 Relu       %b feature_map@0+2048[1,6] in d
  2 Relu       %c feature_map@2048+2048[1,6] in d
  3 Concat     %d feature_map@0+4096[1,6] (no task)
  4 Reshape    %e feature_map@0+4096[1,6] =d
  5 Relu       %f feature_map@4096+4096[5,6]
  6 Add        %y io@0+4096"""


def test_golden_layout():
    m = golden_graph()
    one = ge.Options(enable_single_stream=True)  # tests/streams/test_stream_memory.py: on two streams
    assert memory_layout(ge.compile(m, one.replace(concat_in_place=False))) == GOLDEN
    assert memory_layout(ge.compile(m, one)) == GOLDEN_CONCAT_IN_PLACE
