"""Word count with the Streams API: ``sparkstorm local examples/streams_wordcount.py:topology``."""

from wordcount import SentenceSpout, verify  # noqa: F401 - verify: the exact counts

from topology.streams import StreamBuilder

sb = StreamBuilder()
(
    sb.new_stream(SentenceSpout(), parallelism=2, name="sentences")
    .flat_map(str.split)
    .key_by(lambda word: word)
    .count_by_key()
    .named("count")
)
topology = sb  # sparkstorm builds it (so -c topology.streams.fusion=false applies)
