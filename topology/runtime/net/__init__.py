"""Between workers: the wire codec, the door every frame passes, outbound lanes and
backpressure, addresses, data tokens, CURVE, and the ZeroMQ transport."""
