"""The local AWS for tests and benchmarks: moto, OpenSearch and a hung port, all on loopback."""
